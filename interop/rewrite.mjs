// What a JavaScript program writes when it reads a conversation with JSON.parse and writes it
// back with JSON.stringify: the tests compare it with what docs/schemas.md says.
//
// Usage: node rewrite.mjs FILE...   Prints one line per FILE: JSON.stringify(JSON.parse(text)).
import { readFileSync } from "node:fs";

for (const path of process.argv.slice(2)) {
  const text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(readFileSync(path));
  process.stdout.write(JSON.stringify(JSON.parse(text)) + "\n");
}
