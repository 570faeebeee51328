/**
 * Deterministic formatting of generated TypeScript/JavaScript through the TypeScript printer
 * (a pinned devDependency), so the output never depends on biome or prettier settings.
 */
import ts from "typescript";
import { normaliseText } from "./header.js";

export function formatScript(source: string, fileName: string): string {
  const kind = fileName.endsWith(".js") ? ts.ScriptKind.JS : ts.ScriptKind.TS;
  const file = ts.createSourceFile(fileName, source, ts.ScriptTarget.ES2022, true, kind);
  const diagnostics = (file as unknown as { parseDiagnostics?: ts.Diagnostic[] }).parseDiagnostics ?? [];
  if (diagnostics.length > 0) {
    const first = diagnostics[0];
    const text = first ? ts.flattenDiagnosticMessageText(first.messageText, "\n") : "unknown";
    throw new Error(`generated ${fileName} does not parse: ${text}`);
  }
  const printer = ts.createPrinter({ newLine: ts.NewLineKind.LineFeed, removeComments: false });
  return normaliseText(printer.printFile(file));
}
