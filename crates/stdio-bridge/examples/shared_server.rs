//! Runs a shared server for the key in `CALLTAPE_SHARED_SERVE`, the way `calltape serve` does when a
//! `calltape shared` session starts it: `shared_server <unix|http> <idle-exit-ms> -- CMD ARGS…`.
//!
//! Its files live under `$CALLTAPE_HOME/shared/<key>/`; it stops on SIGTERM or SIGINT, or after the idle
//! period with no session.

use std::time::Duration;

use calltape_stdio_bridge::{
    ChildUpstream, Stderr,
    serve::Serve,
    shared::{SERVE_KEY_ENV, SharedKey, SharedPaths, Transport, serve_shared},
};

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let transport: Transport = args.next().ok_or("give unix or http")?.parse()?;
    let idle: u64 = args.next().ok_or("give the idle exit in ms")?.parse()?;
    let command: Vec<String> = args.skip_while(|a| a == "--").collect();
    let key = SharedKey::new(&std::env::var(SERVE_KEY_ENV)?)?;
    let paths = SharedPaths::from_env(&key)?;
    let serve = Serve::new(ChildUpstream::new(command)?.stderr(Stderr::Inherit))
        .idle_exit(Duration::from_millis(idle));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
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
