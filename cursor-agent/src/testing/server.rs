//! Serving a [`Replica`]: on a loopback server of its own ([`ReplicaServer`]) or on an
//! existing one, each call in an exchange of its own. Apart from the replica's state, so that
//! the exchanges, which read that state, are not needed by it.

use cursor_transport::Origin;
use cursor_transport::testing::{H2Refusal, TestServer, TestServerBuilder};
use tokio::task::JoinHandle;

use super::{Replica, exchange};

impl Replica {
    /// Starts a replica on a fresh loopback server.
    pub async fn start() -> std::io::Result<ReplicaServer> {
        Self::new().listen(TestServer::builder()).await
    }

    /// Starts a replica on a loopback server that refuses HTTP/2 Runs with HTTP 421 and serves
    /// them as RunSSE plus BidiAppend over HTTP/1.1, as behind a proxy that passes only
    /// HTTP/1.1 (docs/PROTOCOL-AGENT.md §13.8). Other refusals: [`Replica::listen`] with
    /// [`TestServerBuilder::refuse_h2`].
    pub async fn start_http1_only() -> std::io::Result<ReplicaServer> {
        Self::new()
            .listen(TestServer::builder().refuse_h2(H2Refusal::Status421))
            .await
    }

    /// Starts serving this replica on a server built from `builder` (give it a
    /// [`handler`](TestServerBuilder::handler) to answer unary and plain HTTP requests, such as
    /// a token refresh, on the same origin).
    pub async fn listen(self, builder: TestServerBuilder) -> std::io::Result<ReplicaServer> {
        let mut server = builder.start().await?;
        let origin = server.origin();
        let replica = self.clone();
        let task = tokio::spawn(async move { replica.serve(&mut server).await });
        Ok(ReplicaServer {
            replica: self,
            origin,
            task,
        })
    }

    /// Serves every streaming call `server` accepts until it stops: `Run` calls (and `RunSSE`
    /// calls, the Run over HTTP/1.1) as the agent backend, anything else with Connect
    /// `unimplemented`. Each call runs in its own task.
    pub async fn serve(&self, server: &mut TestServer) {
        while let Some(call) = server.accept().await {
            tokio::spawn(exchange::serve(self.clone(), call));
        }
    }
}

/// A [`Replica`] serving on its own loopback server; dropping it stops the server.
#[derive(Debug)]
pub struct ReplicaServer {
    replica: Replica,
    origin: Origin,
    task: JoinHandle<()>,
}

impl ReplicaServer {
    /// The server's origin (`http://127.0.0.1:<port>`).
    pub fn origin(&self) -> Origin {
        self.origin.clone()
    }

    /// The replica it serves.
    pub fn replica(&self) -> &Replica {
        &self.replica
    }
}

impl std::ops::Deref for ReplicaServer {
    type Target = Replica;

    fn deref(&self) -> &Replica {
        &self.replica
    }
}

impl Drop for ReplicaServer {
    fn drop(&mut self) {
        // The server lives in the task; aborting it drops the listener and every connection.
        self.task.abort();
    }
}
