//! The demo's scripted client: one session of an MCP client against the demo server, on JSON lines.

use std::io::{self, BufRead, Write};

use calltape_stdio_bridge::vocab::{
    INITIALIZE, INITIALIZED, PROMPTS_GET, PROMPTS_LIST, RESOURCES_LIST, RESOURCES_READ, TOOLS_CALL,
    TOOLS_LIST,
};
use serde_json::{Value, json};

use super::CARD_TOKEN;

/// Runs the demo's client session over a server's input and output: `initialize`, then the
/// server's tools, resources and prompts, then `quote`, `pay` (with [`CARD_TOKEN`]), a `refund` of
/// the payment `pay` made, a resource read and a receipt prompt for that payment. Returns how many
/// requests after `initialize` were answered.
///
/// Fails when `to_server` cannot be written or `from_server` cannot be read, or ends before a
/// request is answered.
pub fn run_script(to_server: impl Write, from_server: impl BufRead) -> io::Result<usize> {
    let mut client = ScriptClient {
        to_server,
        from_server,
        next_id: 0,
    };
    client.request(
        INITIALIZE,
        json!({"protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "calltape-demo-client", "version": env!("CARGO_PKG_VERSION")}}),
    )?;
    client.notify(INITIALIZED)?;
    let mut answered = 0;
    let mut payment = String::new();
    for (method, params) in script() {
        let answer = client.request(method, with_payment(params, &payment))?;
        if let Some(id) = answer
            .pointer("/result/structuredContent/paymentId")
            .and_then(Value::as_str)
        {
            payment = id.to_owned();
        }
        answered += 1;
    }
    Ok(answered)
}

/// The scripted client session: (method, params). As a client does, it reads the server's lists
/// first; the recorder writes them once the session ends.
fn script() -> Vec<(&'static str, Value)> {
    vec![
        (TOOLS_LIST, json!({})),
        (RESOURCES_LIST, json!({})),
        (PROMPTS_LIST, json!({})),
        (
            TOOLS_CALL,
            json!({"name": "quote", "arguments": {"symbol": "ACME"}}),
        ),
        (
            TOOLS_CALL,
            json!({"name": "pay", "arguments": {"amount": 12, "currency": "USD", "cardToken": CARD_TOKEN}}),
        ),
        (
            TOOLS_CALL,
            json!({"name": "refund", "arguments": {"paymentId": PAYMENT_ID}}),
        ),
        (RESOURCES_READ, json!({"uri": "demo://terms"})),
        (
            PROMPTS_GET,
            json!({"name": "receipt", "arguments": {"paymentId": PAYMENT_ID}}),
        ),
    ]
}

/// Stands in the script for the id of the payment `pay` made.
const PAYMENT_ID: &str = "$paymentId";

/// `params` with each [`PAYMENT_ID`] replaced by `payment`.
fn with_payment(params: Value, payment: &str) -> Value {
    match params {
        Value::String(s) if s == PAYMENT_ID => Value::String(payment.to_owned()),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (k, with_payment(v, payment)))
                .collect(),
        ),
        other => other,
    }
}

struct ScriptClient<W, R> {
    to_server: W,
    from_server: R,
    next_id: u64,
}

impl<W: Write, R: BufRead> ScriptClient<W, R> {
    fn send(&mut self, message: &Value) -> io::Result<()> {
        writeln!(self.to_server, "{message}")
            .and_then(|()| self.to_server.flush())
            .map_err(|e| io::Error::new(e.kind(), format!("cannot write to the server: {e}")))
    }

    fn notify(&mut self, method: &str) -> io::Result<()> {
        self.send(&json!({"jsonrpc": "2.0", "method": method}))
    }

    fn request(&mut self, method: &str, params: Value) -> io::Result<Value> {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        let mut line = String::new();
        loop {
            line.clear();
            let n = self.from_server.read_line(&mut line).map_err(|e| {
                io::Error::new(e.kind(), format!("cannot read from the server: {e}"))
            })?;
            if n == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("the server closed its output before answering {method}"),
                ));
            }
            let Ok(message) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if message.get("id") == Some(&json!(id)) && message.get("method").is_none() {
                return Ok(message);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::BufReader;

    use super::*;
    use crate::demo::serve;

    /// A writer that keeps a copy of what it passes on.
    struct Tee<W> {
        inner: W,
        copy: Vec<u8>,
    }

    impl<W: Write> Write for Tee<W> {
        fn write(&mut self, data: &[u8]) -> io::Result<usize> {
            let n = self.inner.write(data)?;
            self.copy.extend_from_slice(&data[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> io::Result<()> {
            self.inner.flush()
        }
    }

    #[test]
    fn the_script_runs_against_the_demo_server_and_follows_the_new_payment() {
        let (server_input, to_server) = io::pipe().unwrap();
        let (from_server, server_output) = io::pipe().unwrap();
        let server =
            std::thread::spawn(move || serve(1, BufReader::new(server_input), server_output));
        let mut sent = Tee {
            inner: to_server,
            copy: Vec::new(),
        };
        let answered = run_script(&mut sent, BufReader::new(from_server));
        // The server's input ends with the client's pipe; it returns, and is joined.
        drop(sent.inner);
        server.join().unwrap().unwrap();
        assert_eq!(answered.unwrap(), script().len());
        let sent = String::from_utf8(sent.copy).unwrap();
        let refund = sent
            .lines()
            .find(|l| l.contains("\"refund\""))
            .unwrap_or_else(|| panic!("no refund in {sent}"));
        assert!(refund.contains("\"paymentId\":\"pay_"), "{refund}");
        assert!(!sent.contains(PAYMENT_ID), "{sent}");
    }

    #[test]
    fn a_server_that_ends_before_answering_is_an_error() {
        let err = run_script(Vec::new(), &b""[..]).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
        assert!(
            err.to_string().contains("before answering initialize"),
            "{err}"
        );
    }
}
