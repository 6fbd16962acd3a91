// A small TypeScript consumer of orion-core's format, typed by declarations that
// json-schema-to-typescript generated from the checked-in schemas (see gen-types.mjs).
//
// Usage: node build/reader.js SCHEMAS_DIR FILE...
// Each FILE.json is read as a conversation, each FILE.jsonl as an agent event stream; every
// document is validated with ajv (a type guard) and then read through the generated types.
// Prints, as JSON, a summary per file that the Python tests compare with orion_messages.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Ajv2020 } from "ajv/dist/2020.js";
import type { Conversation, Message, Role, ToolResult } from "./generated/conversation.js";
import type { AgentEvent, GenerationStatsEvent } from "./generated/agent-event.js";

interface MessageSummary {
  id: string;
  role: Role;
  turnStart: boolean;
  calls: string[];
  result: { tool_call_id: string; is_error: boolean; pending: boolean } | null;
  token_count: number | null;
  pinned: boolean;
}

interface RecordedSummary {
  id: string;
  token_count: number | null;
}

// Every role, checked exhaustively: a role added to the schema fails to compile here.
function startsTurn(role: Role): boolean {
  switch (role) {
    case "user":
      return true;
    case "system":
    case "assistant":
    case "tool_call":
    case "tool_result":
      return false;
    default: {
      const unreachable: never = role;
      return unreachable;
    }
  }
}

function summarize(message: Message): MessageSummary {
  const result: ToolResult | null = message.tool_result ?? null;
  return {
    id: message.id,
    role: message.role,
    turnStart: startsTurn(message.role),
    calls: (message.tool_calls ?? []).map((call) => call.name),
    result:
      result === null
        ? null
        : { tool_call_id: result.tool_call_id, is_error: result.is_error, pending: result.pending ?? false },
    token_count: message.token_count ?? null,
    pinned: message.pinned ?? false,
  };
}

// What orion_messages.messages_from_events does: each message_end appends its message; the
// generation_stats just before an assistant message's message_end gives its token count.
function record(events: AgentEvent[]): RecordedSummary[] {
  const recorded: RecordedSummary[] = [];
  let stats: GenerationStatsEvent | null = null;
  for (const event of events) {
    switch (event.type) {
      case "generation_stats":
        stats = event;
        break;
      case "message_end": {
        const message = event.message;
        const generated = message.role === "assistant" || message.role === "tool_call";
        const fromStats = generated && stats !== null ? stats.tokens_generated : null;
        recorded.push({ id: message.id, token_count: message.token_count ?? fromStats });
        stats = null;
        break;
      }
      default:
        break;
    }
  }
  return recorded;
}

// The generated types must be as strict as the schema: each line below must NOT compile.
// (tsc fails on an unused @ts-expect-error, so types that were too loose would fail the build.)
// @ts-expect-error "User" is not a role: roles are lower case.
export const wrongRole: Role = "User";
// @ts-expect-error timestamp is required.
export const noTimestamp: Message = { id: "m", role: "user", content: "" };
// @ts-expect-error token_count is a number or null, never a string.
export const textCount: Message = { id: "m", role: "user", content: "", timestamp: 0, token_count: "5" };
// @ts-expect-error is_error is required on a tool result.
export const noIsError: ToolResult = { tool_call_id: "c", tool_name: "t", content: "" };
// @ts-expect-error a message_end event carries its message.
export const bareEnd: AgentEvent = { type: "message_end" };
// @ts-expect-error there is no "tool_exec" event.
export const unknownEvent: AgentEvent = { type: "tool_exec" };

const [schemasDir, ...files] = process.argv.slice(2);
if (schemasDir === undefined) {
  throw new Error("usage: node build/reader.js SCHEMAS_DIR FILE...");
}
const ajv = new Ajv2020({ strict: true, allowUnionTypes: true, allErrors: true });
const isConversation = ajv.compile<Conversation>(
  JSON.parse(readFileSync(join(schemasDir, "conversation.schema.json"), "utf8")),
);
const isEvent = ajv.compile<AgentEvent>(JSON.parse(readFileSync(join(schemasDir, "agent-event.schema.json"), "utf8")));

// As orion-core reads: invalid UTF-8 is an error (readFileSync's "utf8" would put U+FFFD in its
// place), and a byte order mark stays in the text, where JSON.parse refuses it as serde does.
const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
// A blank line holds JSON whitespace only (String.prototype.trim would also drop U+00A0 and
// other Unicode spaces, which orion_messages.iter_events refuses).
const blank = /^[ \t\r]*$/;

const output: Record<string, MessageSummary[] | RecordedSummary[]> = {};
for (const file of files) {
  let text: string;
  try {
    text = decoder.decode(readFileSync(file));
  } catch {
    throw new Error(`${file}: not UTF-8`);
  }
  if (file.endsWith(".jsonl")) {
    const events: AgentEvent[] = [];
    for (const line of text.split("\n")) {
      if (blank.test(line)) {
        continue;
      }
      const value: unknown = JSON.parse(line);
      if (!isEvent(value)) {
        throw new Error(`${file}: not an agent event: ${ajv.errorsText(isEvent.errors)}`);
      }
      events.push(value);
    }
    output[file] = record(events);
  } else {
    const value: unknown = JSON.parse(text);
    if (!isConversation(value)) {
      throw new Error(`${file}: not a conversation: ${ajv.errorsText(isConversation.errors)}`);
    }
    output[file] = value.map(summarize);
  }
}
process.stdout.write(JSON.stringify(output));
