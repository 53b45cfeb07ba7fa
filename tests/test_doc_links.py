"""The README and the docs pages link to each other and to the sources by relative paths:
every such link must reach a file, and a link to `#a-heading` a heading of that page, as
GitHub names its anchors. The README stays a first screen: its reference lives in docs/."""

import re
from pathlib import Path

import pytest

from tests.support.paths import REPO

PAGES = [REPO / "README.md", REPO / "DEVELOPERS.md", *sorted((REPO / "docs").glob("*.md"))]
# The README is what a newcomer reads first (issue: at most 12 kB, the reference in docs/).
README_MAX_BYTES = 12_000

FENCE = re.compile(r"^(`{3,}|~{3,}).*?^\1[ \t]*$", re.M | re.S)
CODE_SPAN = re.compile(r"(`+).+?\1", re.S)
# [text](target) and ![alt](target), the target up to a space (a title may follow) or ")".
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$", re.M)


def _prose(text: str) -> str:
    """The text without code: a link inside a code block or span is an example, not a link."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def anchors(page: Path) -> set[str]:
    """The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces as
    hyphens, a repeated one numbered (`-1`, `-2`)."""
    seen: dict[str, int] = {}
    names = set()
    for heading in HEADING.findall(FENCE.sub("", page.read_text(encoding="utf-8"))):
        text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
        slug = re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        names.add(slug if count == 0 else f"{slug}-{count}")
    return names


def links(page: Path) -> list[str]:
    return LINK.findall(_prose(page.read_text(encoding="utf-8")))


def _relative(target: str) -> bool:
    return not re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I)


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(REPO)))
def test_every_relative_link_reaches_a_file_and_its_heading(page: Path) -> None:
    broken = []
    for target in filter(_relative, links(page)):
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(
                f"{target}: no file {file.relative_to(REPO) if file.is_relative_to(REPO) else file}"
            )
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(f"{target}: no heading with the anchor #{anchor} in {file.name}")
    assert not broken, f"{page.relative_to(REPO)} links to what is not there:\n" + "\n".join(broken)


def test_the_checker_sees_links_and_anchors_as_github_does(tmp_path: Path) -> None:
    """Not vacuous: the link and anchor rules find what they must and skip code."""
    page = tmp_path / "page.md"
    page.write_text(
        "# Will it fit? The `memory` forecast\n\n## In result.json\n\n## In result.json\n\n"
        'See [a](other.md#x) and ![pic](images/a.png "title") and [web](https://x.org).\n'
        "`[not](a-link.md)`\n\n```md\n[nor](this.md)\n```\n",
        encoding="utf-8",
    )
    assert anchors(page) == {"will-it-fit-the-memory-forecast", "in-resultjson", "in-resultjson-1"}
    assert links(page) == ["other.md#x", "images/a.png", "https://x.org"]


def test_the_readme_is_a_first_screen() -> None:
    size = len((REPO / "README.md").read_bytes())
    assert size <= README_MAX_BYTES, (
        f"README.md is {size} bytes (at most {README_MAX_BYTES}): put reference material in a "
        "docs/ page and link it from the README"
    )


def test_the_readme_shows_the_editor_in_pictures_the_e2e_suite_takes() -> None:
    """Each picture the README shows is one the end-to-end suite saves
    (tests/e2e/lib/docImages.mjs, `make e2e-images`), so a new release's pictures come from
    running the suite, not from someone's screen."""
    shown = [t for t in links(REPO / "README.md") if t.startswith("docs/images/")]
    assert shown, "the README shows no picture of the editor"
    suite = "\n".join(
        p.read_text(encoding="utf-8")
        for p in (REPO / "tests" / "e2e").rglob("*.mjs")
        if "node_modules" not in p.parts
    )
    for target in shown:
        name = Path(target).stem
        assert f"'{name}'" in suite, f"{target}: no step of tests/e2e saves a picture named {name}"
