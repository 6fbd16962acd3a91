// Validate files with the checked-in JSON Schemas, using ajv's Draft 2020-12 build.
//
// Reads a JSON request on stdin:
//   {"schemas": ["/abs/schemas/conversation.schema.json", ...],
//    "items": [{"path": "/abs/fixtures/x.json", "schema": "urn:...:conversation.schema.json", "lines": false}, ...]}
// and prints a JSON array of verdicts on stdout, one per document (or per non-blank line when
// "lines" is true): {"path", "line", "verdict": "valid" | "invalid" | "malformed" | "error", "errors"}.
// Lines are split and judged blank as the Python tests do (bytes.split(b"\n"), bytes.strip()).
// "malformed" means the bytes are not UTF-8 or not JSON that JSON.parse accepts; "error" means
// validation itself threw (for instance, a stack overflow on very deep nesting).
//
// ajv sees numbers as JavaScript doubles: integers beyond 2^53 are rounded before the i64 bounds
// of "timestamp" are checked, so 9223372036854775808 (2^63) passes "maximum": 9223372036854775807.
import { readFileSync } from "node:fs";
import { Ajv2020 } from "ajv/dist/2020.js";

const request = JSON.parse(readFileSync(0, "utf8"));
const ajv = new Ajv2020({ strict: true, allowUnionTypes: true, allErrors: true });
for (const file of request.schemas) {
  ajv.addSchema(JSON.parse(readFileSync(file, "utf8")));
}
const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

function verdict(validate, bytes) {
  let text;
  try {
    text = decoder.decode(bytes);
  } catch (error) {
    return { verdict: "malformed", errors: ["not UTF-8"] };
  }
  let document;
  try {
    document = JSON.parse(text);
  } catch (error) {
    return { verdict: "malformed", errors: [String(error.message)] };
  }
  try {
    if (validate(document)) {
      return { verdict: "valid", errors: [] };
    }
    const errors = validate.errors.slice(0, 5).map((e) => `${e.instancePath || "/"}: ${e.message}`);
    return { verdict: "invalid", errors };
  } catch (error) {
    return { verdict: "error", errors: [String(error.message)] };
  }
}

const results = [];
for (const item of request.items) {
  const validate = ajv.getSchema(item.schema);
  if (validate === undefined) {
    throw new Error(`unknown schema ${item.schema}`);
  }
  const bytes = readFileSync(item.path);
  if (!item.lines) {
    results.push({ path: item.path, line: null, ...verdict(validate, bytes) });
    continue;
  }
  // Split the bytes, not the text, so that one line that is not UTF-8 spoils only itself.
  let start = 0;
  let number = 1;
  while (start <= bytes.length) {
    let end = bytes.indexOf(0x0a, start);
    if (end === -1) {
      end = bytes.length;
    }
    let line = bytes.subarray(start, end);
    if (line.length > 0 && line[line.length - 1] === 0x0d) {
      line = line.subarray(0, line.length - 1);
    }
    if (!/^[ \t\r\x0b\x0c]*$/.test(line.toString("latin1"))) {
      results.push({ path: item.path, line: number, ...verdict(validate, line) });
    }
    start = end + 1;
    number += 1;
  }
}
process.stdout.write(JSON.stringify(results));
