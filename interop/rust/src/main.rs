//! orion-core's wire types, as the format reference describes them, read and written by serde.
//!
//! `orion-serde conversation [--pretty]` reads one conversation from standard input and writes
//! it back (serde_json's compact or pretty form); on a refusal it prints serde_json's error on
//! standard error and exits with 1. `orion-serde conversation-lines`, `message-lines` (a JSON
//! Lines log) and `event-lines` read one document a line and answer a line each: the document
//! written back, or `!` and serde_json's error as a JSON string (its text can hold a line break).

use std::io::{self, BufRead, Read, Write};

use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Role {
    System,
    User,
    Assistant,
    ToolCall,
    ToolResult,
}

#[derive(Serialize, Deserialize)]
struct ToolCall {
    id: String,
    name: String,
    arguments: Value,
}

fn is_false(value: &bool) -> bool {
    !*value
}

#[derive(Serialize, Deserialize)]
struct ToolResult {
    tool_call_id: String,
    tool_name: String,
    content: String,
    is_error: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    pending: bool,
}

#[derive(Serialize, Deserialize)]
struct Message {
    id: String,
    role: Role,
    content: String,
    timestamp: i64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<ToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tool_result: Option<ToolResult>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    token_count: Option<u32>,
    #[serde(default, skip_serializing_if = "is_false")]
    pinned: bool,
}

#[derive(Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum AgentEvent {
    AgentStart,
    AgentEnd { messages: Vec<Message> },
    TurnStart,
    TurnEnd { message: Message, tool_results: Vec<ToolResult> },
    MessageStart { message: Message },
    MessageDelta { delta: String, tokens_generated: u32, tokens_per_sec: f64 },
    MessageEnd { message: Message },
    GenerationStats {
        tokens_generated: u32,
        prompt_tokens: u32,
        tokens_per_sec: f64,
        time_to_first_token_ms: f64,
        generation_time_ms: f64,
    },
    ToolExecStart { tool_call_id: String, tool_name: String, args: Value },
    ToolExecUpdate { tool_call_id: String, tool_name: String, partial: String },
    ToolExecEnd { tool_call_id: String, tool_name: String, result: ToolResult },
    ToolDenied { tool_call_id: String, tool_name: String, reason: String },
    ContextBudget { used_tokens: u32, max_tokens: u32, messages_in_context: u32, messages_pruned: u32 },
    Warning { message: String },
    Error { message: String },
}

/// Reads a document of type `T` and writes it back: `Err` holds serde_json's error text.
///
/// Invalid UTF-8 is refused anywhere, as the format reference says orion-core refuses it (a file
/// read into a `String`); where serde_json's own reader finds it, in a string it reads, its error
/// and position are the ones given. It skips the strings of unknown keys unread.
fn rewrite<T: Serialize + for<'de> Deserialize<'de>>(data: &[u8], pretty: bool) -> Result<Vec<u8>, String> {
    let value: T = serde_json::from_slice(data).map_err(|error| error.to_string())?;
    if let Err(error) = std::str::from_utf8(data) {
        return Err(format!("invalid UTF-8 outside the strings serde_json reads: {}", error));
    }
    let written = if pretty { serde_json::to_vec_pretty(&value) } else { serde_json::to_vec(&value) };
    written.map_err(|error| error.to_string())
}

fn each_line<T: Serialize + for<'de> Deserialize<'de>>() -> io::Result<()> {
    let mut out = io::BufWriter::new(io::stdout().lock());
    for line in io::stdin().lock().split(b'\n') {
        match rewrite::<T>(&line?, false) {
            Ok(written) => out.write_all(&written)?,
            Err(error) => write!(out, "!{}", Value::String(error))?,
        }
        out.write_all(b"\n")?;
    }
    out.flush()
}

fn main() -> io::Result<()> {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    match arguments.first().map(String::as_str) {
        Some("conversation-lines") => each_line::<Vec<Message>>(),
        Some("message-lines") => each_line::<Message>(),
        Some("event-lines") => each_line::<AgentEvent>(),
        Some("conversation") => {
            let mut data = Vec::new();
            io::stdin().read_to_end(&mut data)?;
            let pretty = arguments.get(1).map(String::as_str) == Some("--pretty");
            match rewrite::<Vec<Message>>(&data, pretty) {
                Ok(written) => io::stdout().write_all(&written),
                Err(error) => {
                    eprintln!("{}", error);
                    std::process::exit(1)
                }
            }
        }
        _ => {
            eprintln!("usage: orion-serde conversation [--pretty] | conversation-lines | message-lines | event-lines");
            std::process::exit(2)
        }
    }
}
