//! Bridge a Streamable HTTP endpoint: `bridge_url URL ['Header: value'…]` is a stdio MCP server for a
//! client that speaks only stdio, in front of a server that speaks only HTTP. A session the server
//! forgets is opened again, and a server that is down is waited for, without the client noticing.
//!
//! ```text
//! cargo run --example bridge_url --features http -- http://127.0.0.1:3000/mcp 'Authorization: Bearer …'
//! ```

use calltape_stdio_bridge::{Bridge, ExtraHeaders, HttpUpstream, stdio};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let url = args
        .next()
        .ok_or("usage: bridge_url URL ['Header: value'…]")?;
    let mut headers = ExtraHeaders::new();
    for line in args {
        headers.push_line(&line)?;
    }
    let bridge = Bridge::builder()
        .upstream(HttpUpstream::new(&url, headers)?)
        .build()?;
    bridge.run(stdio::stdin(), stdio::stdout()).await?;
    Ok(())
}
