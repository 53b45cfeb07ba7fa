// Reads launch configurations the way VS Code does: JSON with comments and trailing commas.
import { readFile } from 'node:fs/promises';
import { createScanner, findNodeAtLocation, parse, parseTree, SyntaxKind } from 'jsonc-parser';

export async function readJsonc(file) {
  const text = await readFile(file, 'utf8');
  const errors = [];
  const value = parse(text, errors, { allowTrailingComma: true });
  if (errors.length) throw new Error(`${file} is not valid JSON with comments`);
  return { text, value };
}

/**
 * The pieces of a hand-written launch file that an edit must keep byte-for-byte: every comment,
 * and the source text of every configuration object.
 */
export function handWrittenPieces(text) {
  const pieces = [];
  const scanner = createScanner(text, false);
  for (let kind = scanner.scan(); kind !== SyntaxKind.EOF; kind = scanner.scan()) {
    if (kind === SyntaxKind.LineCommentTrivia || kind === SyntaxKind.BlockCommentTrivia) {
      const start = scanner.getTokenOffset();
      pieces.push(text.slice(start, start + scanner.getTokenLength()));
    }
  }
  const tree = parseTree(text, [], { allowTrailingComma: true });
  const configurations = findNodeAtLocation(tree, ['configurations']);
  for (const node of configurations?.children ?? []) {
    pieces.push(text.slice(node.offset, node.offset + node.length));
  }
  return pieces;
}
