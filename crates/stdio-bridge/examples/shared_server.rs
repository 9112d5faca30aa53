//! Both sides of a shared server, the way `calltape serve` and `calltape shared` run them.
//!
//! - `shared_server <unix|http> <idle-exit-ms> -- CMD ARGS…` runs the shared server of the key in
//!   `CALLTAPE_SHARED_SERVE`, as a session starts it. It stops on SIGTERM or SIGINT, or after the idle
//!   period with no session.
//! - `shared_server session <key> <unix|http> -- PROGRAM ARGS…` is a stdio session of the key's server
//!   (a bridge over stdin and stdout), which runs `PROGRAM ARGS…` to start the server when none proves
//!   itself.
//!
//! The files of both live under `$CALLTAPE_HOME/shared/<key>/`.

use std::time::Duration;

use calltape_stdio_bridge::{
    Bridge, ChildUpstream, Stderr,
    serve::{Serve, Transport},
    shared::{Launcher, SERVE_KEY_ENV, SharedKey, SharedPaths, SharedUpstream, serve_shared},
};

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1).peekable();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    if args.peek().map(String::as_str) == Some("session") {
        args.next();
        let key = SharedKey::new(&args.next().ok_or("give the key")?)?;
        let transport: Transport = args.next().ok_or("give unix or http")?.parse()?;
        let mut command = args.skip_while(|a| a == "--");
        let program = command.next().ok_or("give the server's command")?;
        let launcher = Launcher::new(program, command)?;
        let upstream = SharedUpstream::new(SharedPaths::from_env(&key)?, transport, launcher);
        let bridge = Bridge::builder().upstream(upstream).build()?;
        runtime.block_on(bridge.run(tokio::io::stdin(), tokio::io::stdout()))?;
        return Ok(());
    }
    let transport: Transport = args.next().ok_or("give unix or http")?.parse()?;
    let idle: u64 = args.next().ok_or("give the idle exit in ms")?.parse()?;
    let command: Vec<String> = args.skip_while(|a| a == "--").collect();
    let key = SharedKey::new(&std::env::var(SERVE_KEY_ENV)?)?;
    let paths = SharedPaths::from_env(&key)?;
    // The mark is this process's alone: the server it runs is not the key's server.
    let child = ChildUpstream::new(command)?
        .stderr(Stderr::Inherit)
        .env(SERVE_KEY_ENV, "");
    let serve = Serve::new(child).idle_exit(Duration::from_millis(idle));
    runtime.block_on(async {
        let stop = async {
            use tokio::signal::unix::{SignalKind, signal};
            let mut term = signal(SignalKind::terminate()).expect("a SIGTERM handler");
            let mut int = signal(SignalKind::interrupt()).expect("a SIGINT handler");
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        };
        serve_shared(&paths, transport, serve, stop).await
    })?;
    Ok(())
}
