//! A fixed set of inference threads fed by a bounded queue. The async runtime only enqueues and
//! awaits a oneshot reply: it never runs inference itself. A full queue is reported at once
//! (the HTTP layer turns it into 503 + `retry-after`) instead of piling up latency.
//!
//! The queue has two lanes of the same bound: single texts (a search query, which a user is
//! waiting for) and batches (a catalog being indexed). A free thread always takes a waiting
//! single text first, so a query waits for at most the batches already running, never for the
//! whole backlog of an indexing burst.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

use tokio::sync::oneshot;

use crate::model::{Embed, EmbedError, Embedded};

/// The reply to one submitted batch.
pub type Reply = oneshot::Receiver<Result<Embedded, EmbedError>>;

struct Job {
    texts: Vec<String>,
    reply: oneshot::Sender<Result<Embedded, EmbedError>>,
}

#[derive(Default)]
struct Lanes {
    single: VecDeque<Job>,
    batch: VecDeque<Job>,
    closed: bool,
}

struct Queue {
    lanes: Mutex<Lanes>,
    ready: Condvar,
    capacity: usize,
}

impl Queue {
    // A poisoned lock still guards valid queues (no code panics while holding it).
    fn lock(&self) -> MutexGuard<'_, Lanes> {
        self.lanes.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The next job, single texts first; None once closed and drained.
    fn next(&self) -> Option<Job> {
        let mut lanes = self.lock();
        loop {
            if let Some(job) = lanes.single.pop_front().or_else(|| lanes.batch.pop_front()) {
                return Some(job);
            }
            if lanes.closed {
                return None;
            }
            lanes = self
                .ready
                .wait(lanes)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

/// Why a batch was not queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubmitError {
    /// Every worker is busy and the request's lane holds its maximum of waiting requests.
    Full,
    /// The workers are gone (only during shutdown).
    Closed,
}

/// Why the pool could not start.
#[derive(Debug)]
pub enum PoolError {
    /// `workers` or `queue` was 0.
    Size(&'static str),
    /// The OS refused a thread.
    Spawn(std::io::Error),
}

impl std::fmt::Display for PoolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PoolError::Size(what) => write!(f, "{what} must be at least 1"),
            PoolError::Spawn(e) => write!(f, "could not start an inference thread: {e}"),
        }
    }
}

impl std::error::Error for PoolError {}

/// Inference threads and their bounded queue. Dropping the pool closes the queue; the threads
/// finish what is queued and exit.
pub struct Pool {
    queue: Arc<Queue>,
    workers: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("workers", &self.workers.len())
            .field("queue", &self.queue.capacity)
            .finish()
    }
}

fn work(backend: &dyn Embed, queue: &Queue) {
    while let Some(job) = queue.next() {
        if job.reply.is_closed() {
            // The client went away while the job was queued: skip the work.
            continue;
        }
        let result = backend.embed(&job.texts);
        // The client may have gone away meanwhile; nothing to do then.
        let _ = job.reply.send(result);
    }
}

impl Pool {
    /// Starts `workers` inference threads behind a queue of at most `queue` waiting single
    /// texts and `queue` waiting batches.
    pub fn start(backend: Arc<dyn Embed>, workers: usize, queue: usize) -> Result<Self, PoolError> {
        if workers == 0 {
            return Err(PoolError::Size("--workers"));
        }
        if queue == 0 {
            return Err(PoolError::Size("--queue"));
        }
        let queue = Arc::new(Queue {
            lanes: Mutex::new(Lanes::default()),
            ready: Condvar::new(),
            capacity: queue,
        });
        let mut pool = Self {
            queue,
            workers: Vec::with_capacity(workers),
        };
        for i in 0..workers {
            let backend = Arc::clone(&backend);
            let queue = Arc::clone(&pool.queue);
            // On failure `pool` drops here, which closes the queue and ends the started threads.
            let handle = std::thread::Builder::new()
                .name(format!("embed-{i}"))
                .spawn(move || work(backend.as_ref(), &queue))
                .map_err(PoolError::Spawn)?;
            pool.workers.push(handle);
        }
        Ok(pool)
    }

    /// Queues texts without blocking; await the returned receiver for the vectors.
    pub fn submit(&self, texts: Vec<String>) -> Result<Reply, SubmitError> {
        let (reply, rx) = oneshot::channel();
        let mut lanes = self.queue.lock();
        if lanes.closed {
            return Err(SubmitError::Closed);
        }
        let lane = if texts.len() == 1 {
            &mut lanes.single
        } else {
            &mut lanes.batch
        };
        if lane.len() >= self.queue.capacity {
            return Err(SubmitError::Full);
        }
        lane.push_back(Job { texts, reply });
        drop(lanes);
        self.queue.ready.notify_one();
        Ok(rx)
    }

    /// Number of inference threads.
    pub fn workers(&self) -> usize {
        self.workers.len()
    }

    /// Most requests waiting in each lane.
    pub fn queue(&self) -> usize {
        self.queue.capacity
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.queue.lock().closed = true;
        self.queue.ready.notify_all();
        // The threads exit once the queue is drained; they are not joined here so that dropping
        // the server never waits for a batch in progress.
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Blocks every batch until released, recording the batches it ran.
    struct Gate {
        open: Mutex<bool>,
        cv: Condvar,
        ran: AtomicUsize,
        order: Mutex<Vec<String>>,
    }

    fn gate(open: bool) -> Arc<Gate> {
        Arc::new(Gate {
            open: Mutex::new(open),
            cv: Condvar::new(),
            ran: AtomicUsize::new(0),
            order: Mutex::new(Vec::new()),
        })
    }

    impl Embed for Gate {
        fn dimensions(&self) -> usize {
            2
        }
        fn embed(&self, texts: &[String]) -> Result<Embedded, EmbedError> {
            let mut open = self.open.lock().unwrap();
            while !*open {
                open = self.cv.wait(open).unwrap();
            }
            self.ran.fetch_add(1, Ordering::SeqCst);
            self.order.lock().unwrap().push(texts.join("+"));
            Ok(Embedded {
                vectors: texts.iter().map(|_| vec![1.0, 0.0]).collect(),
                tokens: texts.len(),
            })
        }
    }

    #[test]
    fn full_queue_is_reported_and_work_resumes() {
        let gate = gate(false);
        let pool = Pool::start(gate.clone(), 1, 2).unwrap();
        // The worker takes one job and blocks on the gate; wait until it has taken it.
        let first = pool.submit(vec!["a".into()]).unwrap();
        let mut queued = Vec::new();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            match pool.submit(vec!["b".into()]) {
                Ok(rx) => queued.push(rx),
                Err(SubmitError::Full) if queued.len() == 2 => break,
                Err(SubmitError::Full) => std::thread::yield_now(),
                Err(e) => panic!("{e:?}"),
            }
            assert!(std::time::Instant::now() < deadline, "queue never filled");
        }
        assert_eq!(
            queued.len(),
            2,
            "one running + two queued, the next is refused"
        );
        *gate.open.lock().unwrap() = true;
        gate.cv.notify_all();
        let done = first.blocking_recv().unwrap().unwrap();
        assert_eq!(done.vectors, vec![vec![1.0, 0.0]]);
        for rx in queued {
            assert_eq!(rx.blocking_recv().unwrap().unwrap().tokens, 1);
        }
        assert_eq!(gate.ran.load(Ordering::SeqCst), 3);
        // Room again.
        assert!(pool.submit(vec!["c".into()]).is_ok());
    }

    #[test]
    fn zero_sizes_are_refused() {
        let gate: Arc<dyn Embed> = gate(true);
        assert!(matches!(
            Pool::start(gate.clone(), 0, 1),
            Err(PoolError::Size(_))
        ));
        assert!(matches!(Pool::start(gate, 1, 0), Err(PoolError::Size(_))));
    }

    #[test]
    fn single_texts_go_before_waiting_batches() {
        let gate = gate(false);
        let pool = Pool::start(gate.clone(), 1, 4).unwrap();
        let running = pool.submit(vec!["running".into()]).unwrap();
        // Wait until the worker holds the first job, so the next two are both waiting.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !pool.queue.lock().single.is_empty() {
            assert!(std::time::Instant::now() < deadline);
            std::thread::yield_now();
        }
        let batch = pool.submit(vec!["b1".into(), "b2".into()]).unwrap();
        let query = pool.submit(vec!["query".into()]).unwrap();
        *gate.open.lock().unwrap() = true;
        gate.cv.notify_all();
        for rx in [running, batch, query] {
            rx.blocking_recv().unwrap().unwrap();
        }
        assert_eq!(
            *gate.order.lock().unwrap(),
            vec!["running", "query", "b1+b2"]
        );
    }

    #[test]
    fn each_lane_has_its_own_bound() {
        let gate = gate(false);
        let pool = Pool::start(gate.clone(), 1, 1).unwrap();
        let mut held = vec![pool.submit(vec!["a".into()]).unwrap()];
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !pool.queue.lock().single.is_empty() {
            assert!(std::time::Instant::now() < deadline);
            std::thread::yield_now();
        }
        held.push(pool.submit(vec!["b".into()]).unwrap());
        held.push(pool.submit(vec!["c".into(), "d".into()]).unwrap());
        assert_eq!(
            pool.submit(vec!["e".into()]).unwrap_err(),
            SubmitError::Full
        );
        assert_eq!(
            pool.submit(vec!["f".into(), "g".into()]).unwrap_err(),
            SubmitError::Full
        );
        *gate.open.lock().unwrap() = true;
        gate.cv.notify_all();
        for rx in held {
            rx.blocking_recv().unwrap().unwrap();
        }
    }
}
