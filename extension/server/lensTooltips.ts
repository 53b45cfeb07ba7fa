// Code lenses with the tooltips the server gives them. LSP 3.18's `Command.tooltip` is what the
// server sends; vscode-languageclient 9 drops it when converting, so this middleware asks for the
// lenses itself, converts them as the client would, and puts each tooltip back.
import type * as vscode from "vscode";
import { CodeLensRequest, type LanguageClient, type Middleware } from "vscode-languageclient/node";

export function lensesWithTooltips(client: () => LanguageClient | undefined): Middleware["provideCodeLenses"] {
  return async (document: vscode.TextDocument, token: vscode.CancellationToken, next) => {
    const current = client();
    if (!current) {
      return next(document, token);
    }
    try {
      const params = current.code2ProtocolConverter.asCodeLensParams(document);
      const raw = await current.sendRequest(CodeLensRequest.type, params, token);
      const lenses = await current.protocol2CodeConverter.asCodeLenses(raw, token);
      raw?.forEach((lens, index) => {
        const tooltip = (lens.command as { tooltip?: unknown } | undefined)?.tooltip;
        const command = lenses?.[index]?.command;
        if (command && typeof tooltip === "string") {
          command.tooltip = tooltip;
        }
      });
      return lenses;
    } catch (error) {
      return current.handleFailedRequest(CodeLensRequest.type, token, error, null);
    }
  };
}
