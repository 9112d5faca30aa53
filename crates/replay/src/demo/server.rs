//! The demo MCP server: a small payment API on JSON lines, in two versions whose answers and tool
//! surface differ as a real release's would.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::io::{self, BufRead, Write};
use std::time::{SystemTime, UNIX_EPOCH};

use calltape_stdio_bridge::vocab::{
    self, HANDSHAKE_VERSION, INITIALIZE, PING, PROMPTS_GET, PROMPTS_LIST, RESOURCES_LIST,
    RESOURCES_READ, TOOLS_CALL, TOOLS_LIST,
};
use serde_json::{Value, json};

/// Serves the demo MCP server, version `version` (1, or 2 for any other number), one JSON-RPC
/// message a line from `input`, each answer a line on `output`, until `input` ends or `output`
/// cannot be written (a client that went away is no error).
///
/// Version 2 has a new price, a `pay` that fails and a `refund` that works, and a tool surface that
/// changed: `convert` gone, `balance` new, a new required argument for `pay`.
///
/// ```
/// let mut output = Vec::new();
/// let input = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
/// calltape_replay::demo::serve(1, input.as_bytes(), &mut output)?;
/// let answer: serde_json::Value = serde_json::from_slice(&output)?;
/// assert_eq!(answer["result"]["tools"][0]["name"], "quote");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn serve(version: u8, input: impl BufRead, mut output: impl Write) -> io::Result<()> {
    let mut payments = Payments::new();
    for line in input.lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let reply = match serde_json::from_str::<Value>(&line) {
            Ok(message) => handle(version, &mut payments, &message),
            Err(e) => Some(vocab::error_answer(
                &Value::Null,
                vocab::PARSE_ERROR,
                &format!("parse error: {e}"),
            )),
        };
        if let Some(reply) = reply
            && (writeln!(output, "{reply}").is_err() || output.flush().is_err())
        {
            break;
        }
    }
    Ok(())
}

fn handle(version: u8, payments: &mut Payments, message: &Value) -> Option<Value> {
    let id = message.get("id")?.clone();
    let method = message.get("method").and_then(Value::as_str)?;
    let params = message.get("params").cloned().unwrap_or(Value::Null);
    let result = match method {
        INITIALIZE => {
            let asked = params.get("protocolVersion").and_then(Value::as_str);
            let supported = ["2024-11-05", "2025-03-26", "2025-06-18", HANDSHAKE_VERSION];
            let version_text = asked
                .filter(|v| supported.contains(v))
                .unwrap_or("2025-06-18");
            Ok(json!({
                "protocolVersion": version_text,
                "capabilities": {"tools": {}, "resources": {}, "prompts": {}},
                "serverInfo": {"name": "calltape-demo", "version": format!("{version}.0.0")},
            }))
        }
        PING => Ok(json!({})),
        TOOLS_LIST => Ok(json!({"tools": tools(version)})),
        TOOLS_CALL => call_tool(version, payments, &params),
        RESOURCES_LIST => Ok(json!({"resources": [
            {"uri": "demo://terms", "name": "terms", "mimeType": "text/plain"}]})),
        RESOURCES_READ => match params.get("uri").and_then(Value::as_str) {
            Some(uri @ "demo://terms") => {
                Ok(json!({"contents": [{"uri": uri, "mimeType": "text/plain",
                "text": "Quotes are valid for 15 minutes. Payments settle the next day."}]}))
            }
            other => Err((
                vocab::LEGACY_RESOURCE_NOT_FOUND,
                format!("Resource not found: {}", other.unwrap_or("")),
            )),
        },
        PROMPTS_LIST => Ok(json!({"prompts": [{"name": "receipt",
            "arguments": [{"name": "paymentId", "required": true}]}]})),
        PROMPTS_GET => {
            let payment = params
                .pointer("/arguments/paymentId")
                .and_then(Value::as_str)
                .unwrap_or("?");
            Ok(
                json!({"messages": [{"role": "user", "content": {"type": "text",
                "text": format!("Write a short receipt for payment {payment}.")}}]}),
            )
        }
        other => Err((
            vocab::METHOD_NOT_FOUND,
            format!("Method not found: {other}"),
        )),
    };
    Some(match result {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err((code, message)) => vocab::error_answer(&id, code, &message),
    })
}

/// The tools of each version. v2 dropped `convert` and added `balance`, pay needs an
/// `idempotencyKey` now, refund takes an optional `reason`, and quote is described anew: two
/// breaking changes and three compatible ones.
fn tools(version: u8) -> Vec<Value> {
    let v1 = version == 1;
    let mut pay = json!({"amount": {"type": "number"}, "currency": {"type": "string"},
        "cardToken": {"type": "string"}});
    let mut refund = json!({"paymentId": {"type": "string"}});
    let (quote, pay_required) = if v1 {
        ("The price of a symbol", &["amount", "cardToken"][..])
    } else {
        pay["idempotencyKey"] = json!({"type": "string"});
        refund["reason"] = json!({"type": "string"});
        (
            "The price of a symbol, in US dollars",
            &["amount", "cardToken", "idempotencyKey"][..],
        )
    };
    let mut tools = vec![
        tool(
            "quote",
            quote,
            json!({"symbol": {"type": "string"}}),
            &["symbol"],
        ),
        tool("pay", "Pay an amount with a card token", pay, pay_required),
        tool("refund", "Refund a payment", refund, &["paymentId"]),
    ];
    tools.push(if v1 {
        tool(
            "convert",
            "Convert an amount to another currency",
            json!({"amount": {"type": "number"}, "to": {"type": "string"}}),
            &["amount", "to"],
        )
    } else {
        tool("balance", "The balance of the account", json!({}), &[])
    });
    tools
}

fn tool(name: &str, description: &str, properties: Value, required: &[&str]) -> Value {
    json!({"name": name, "description": description,
        "inputSchema": {"type": "object", "properties": properties, "required": required}})
}

fn tool_error(code: &str, text: &str) -> Value {
    json!({"isError": true, "content": [{"type": "text", "text": text}], "_meta": {"code": code}})
}

fn structured(value: Value) -> Value {
    json!({"content": [{"type": "text", "text": value.to_string()}], "structuredContent": value})
}

/// The payments one server process made: each gets a fresh id, so a replay against a new process
/// sees new ids.
struct Payments {
    next: u64,
    made: Vec<String>,
}

impl Payments {
    fn new() -> Self {
        let mut hasher = RandomState::new().build_hasher();
        hasher.write_u128(
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default()
                .as_nanos(),
        );
        Self {
            next: 1000 + hasher.finish() % 9000,
            made: Vec::new(),
        }
    }

    fn make(&mut self) -> String {
        let id = format!("pay_{}", self.next);
        self.next += 1;
        self.made.push(id.clone());
        id
    }
}

fn call_tool(version: u8, payments: &mut Payments, params: &Value) -> Result<Value, (i64, String)> {
    let name = params.get("name").and_then(Value::as_str).unwrap_or("");
    let args = params.get("arguments").cloned().unwrap_or(Value::Null);
    match (name, version) {
        ("quote", _) => {
            let symbol = args.get("symbol").and_then(Value::as_str).unwrap_or("ACME");
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default();
            let mut hasher = RandomState::new().build_hasher();
            hasher.write_u128(now.as_nanos());
            Ok(structured(json!({
                "symbol": symbol,
                "price": if version == 1 { 12 } else { 15 },
                "currency": "USD",
                "quotedAt": now.as_millis() as u64,
                "quoteId": format!("q-{:08x}", hasher.finish() as u32),
            })))
        }
        ("pay", 1) => {
            let token = args.get("cardToken").and_then(Value::as_str).unwrap_or("");
            if !token.starts_with("tok_") {
                return Ok(tool_error(
                    "invalid_card",
                    "the card token is not a card token",
                ));
            }
            let amount = args.get("amount").cloned().unwrap_or(json!(0));
            Ok(structured(
                json!({"status": "paid", "amount": amount, "currency": "USD", "paymentId": payments.make()}),
            ))
        }
        ("pay", _) => Ok(tool_error(
            "card_declined",
            "card declined: the payment provider refused the card",
        )),
        ("refund", 1) => {
            let payment = args.get("paymentId").and_then(Value::as_str).unwrap_or("");
            if !payments.made.iter().any(|p| p == payment) {
                return Ok(tool_error(
                    "unknown_payment",
                    &format!("no payment {payment}"),
                ));
            }
            Ok(tool_error(
                "not_supported",
                "refunds are not supported by this version",
            ))
        }
        ("refund", _) => {
            let payment = args.get("paymentId").cloned().unwrap_or(Value::Null);
            Ok(structured(
                json!({"status": "refunded", "paymentId": payment}),
            ))
        }
        (other, _) => Err((vocab::INVALID_PARAMS, format!("Unknown tool: {other}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answers(version: u8, messages: &[Value]) -> Vec<Value> {
        let input: String = messages.iter().map(|m| format!("{m}\n")).collect();
        let mut output = Vec::new();
        serve(version, input.as_bytes(), &mut output).unwrap();
        output
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_slice(l).unwrap())
            .collect()
    }

    fn call(id: u64, name: &str, arguments: Value) -> Value {
        json!({"jsonrpc": "2.0", "id": id, "method": TOOLS_CALL,
            "params": {"name": name, "arguments": arguments}})
    }

    #[test]
    fn the_two_versions_differ_as_the_demo_says() {
        let pay = call(
            2,
            "pay",
            json!({"amount": 12, "cardToken": crate::demo::CARD_TOKEN}),
        );
        let quote = call(1, "quote", json!({"symbol": "ACME"}));
        let v1 = answers(1, &[quote.clone(), pay.clone()]);
        let v2 = answers(2, &[quote, pay]);
        assert_eq!(v1[0]["result"]["structuredContent"]["price"], 12);
        assert_eq!(v2[0]["result"]["structuredContent"]["price"], 15);
        assert_eq!(v1[1]["result"]["structuredContent"]["status"], "paid");
        assert_eq!(v2[1]["result"]["isError"], true);
        let names = |version| -> Vec<String> {
            answers(
                version,
                &[json!({"jsonrpc": "2.0", "id": 1, "method": TOOLS_LIST})],
            )[0]["result"]["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["name"].as_str().unwrap().to_owned())
                .collect()
        };
        assert_eq!(names(1), ["quote", "pay", "refund", "convert"]);
        assert_eq!(names(2), ["quote", "pay", "refund", "balance"]);
    }

    #[test]
    fn a_bad_line_or_method_gets_an_error_answer_and_a_notification_none() {
        let input = "not json\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"nope\"}\n";
        let mut output = Vec::new();
        serve(1, input.as_bytes(), &mut output).unwrap();
        let lines: Vec<Value> = output
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_slice(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert_eq!(lines[0]["error"]["code"], vocab::PARSE_ERROR);
        assert_eq!(lines[1]["id"], 7);
        assert_eq!(lines[1]["error"]["code"], vocab::METHOD_NOT_FOUND);
    }
}
