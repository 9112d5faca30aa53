//! Serve a child process over loopback HTTP: `serve_child CMD ARGS…` runs the stdio MCP server
//! `CMD ARGS…` once and lets any number of Streamable HTTP clients, of either protocol era, use it at
//! the address it prints, until Ctrl-C.
//!
//! ```text
//! cargo run --example serve_child --features serve -- node server.js
//! ```

use calltape_stdio_bridge::{
    ChildUpstream,
    serve::{Endpoint, ServerBuilder},
};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let command: Vec<String> = std::env::args().skip(1).collect();
    // Port 0: any free port of 127.0.0.1.
    let server = ServerBuilder::new(ChildUpstream::new(command)?)
        .listen_tcp(([127, 0, 0, 1], 0).into())
        .await?;
    if let Endpoint::Http(addr) = server.endpoint() {
        eprintln!("serving at http://{addr}/mcp");
    }
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let stopped = server.run_until(shutdown).await?;
    eprintln!("stopped: {stopped:?}");
    Ok(())
}
