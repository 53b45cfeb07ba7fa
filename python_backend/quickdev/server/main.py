"""The language server entry point. Placeholder until the server lands."""


def serve() -> None:
    raise NotImplementedError("the language server is not written yet")
