//! Pairings (issue 21): the long-term keys a browser profile shares with this user's daemons,
//! and the one-time codes that make them.
//!
//! The keys live in one file per user (`$XDG_STATE_HOME/browser-mcp/pairings.json`, 0600, in a
//! directory [`crate::trust`] accepts), shared by all of that user's daemons: a pairing made
//! with one works with the others and survives restarts. Every lookup reads the file (it is
//! small and handshakes are rare), so a pairing revoked by one daemon is refused by all; every
//! change is a read-modify-write under an exclusive lock, written to a fresh file and renamed.
//!
//! Codes live in this daemon's memory only: `browserctl pair` asks this daemon for one over the
//! control socket (same uid, checked), prints it, and the person enters it in the browser.
//! A code is single use, expires after [`CODE_TTL`], and is burned after a wrong proof or
//! [`CODE_TRIES`] handshakes, so it can be neither guessed online nor farmed for transcripts.
//! A leaf module: the protocol's crypto, std, nix and tokio's Notify.

use crate::protocol::auth::{
    b64, pairing_from_code, unb64, AuthErrorCode, BrowserLabel, CodeSecret, Nonce,
};
pub use crate::protocol::control::PairingInfo;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, VecDeque};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// How long a pairing code is valid.
pub const CODE_TTL: Duration = Duration::from_secs(300);
/// Handshakes a code allows before it is burned (a person mistyping a code gets "unknown
/// code", which does not count: the id differs).
pub const CODE_TRIES: u32 = 5;
/// Codes waiting at once; a new one beyond this pushes out the oldest.
const MAX_PENDING: usize = 8;
/// Spent codes remembered, to say "used" or "expired" rather than "unknown".
const MAX_SPENT: usize = 64;
/// Pairings one user may have.
pub const MAX_PAIRINGS: usize = 256;
/// A pairing file larger than this is not ours.
const MAX_FILE: u64 = 1 << 20;

/// One pairing as the file keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Pairing {
    pub id: String,
    /// Base64 of the 32-byte key.
    pub key: String,
    pub created_at: String,
    #[serde(default)]
    pub browser: BrowserLabel,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct File1 {
    version: u32,
    pairings: Vec<Pairing>,
}

/// A code `browserctl pair` prints.
#[derive(Debug, Clone)]
pub struct NewCode {
    /// `ABCD-EFGH-JKMN-PQRS`.
    pub code: String,
    /// Its public id (`code:ID` in the handshake).
    pub id: String,
    pub expires_in: Duration,
}

/// What became of a code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CodeState {
    Pending,
    /// Used to make this pairing.
    Paired(PairingInfo),
    Expired,
    /// Burned after a wrong proof or too many handshakes.
    Burned,
    Unknown,
}

struct Pending {
    secret: CodeSecret,
    expires: Instant,
    tries: u32,
}

#[derive(Default)]
struct Codes {
    pending: HashMap<String, Pending>,
    spent: VecDeque<(String, CodeState)>,
}

impl Codes {
    fn spend(&mut self, id: &str, state: CodeState) {
        self.pending.remove(id);
        self.spent.retain(|(i, _)| i != id);
        if self.spent.len() >= MAX_SPENT {
            self.spent.pop_front();
        }
        self.spent.push_back((id.to_owned(), state));
    }

    fn expire(&mut self, now: Instant) {
        let old: Vec<String> = self
            .pending
            .iter()
            .filter(|(_, p)| p.expires <= now)
            .map(|(id, _)| id.clone())
            .collect();
        for id in old {
            self.spend(&id, CodeState::Expired);
        }
    }

    fn state(&self, id: &str) -> CodeState {
        if self.pending.contains_key(id) {
            return CodeState::Pending;
        }
        self.spent
            .iter()
            .find(|(i, _)| i == id)
            .map_or(CodeState::Unknown, |(_, s)| s.clone())
    }
}

/// Connections that proved a pairing, per pairing id: a revocation closes them.
type Live = Arc<Mutex<HashMap<String, LiveEntry>>>;

struct LiveEntry {
    token: CancellationToken,
    count: usize,
    /// Tells this entry from a later one for the same id (a pairing revoked, then redone).
    generation: u64,
}

/// Held by a connection that proved a pairing; `revoked()` fires when the pairing is revoked.
pub struct LiveGuard {
    live: Live,
    id: String,
    token: CancellationToken,
    generation: u64,
}

impl LiveGuard {
    pub fn revoked(&self) -> CancellationToken {
        self.token.clone()
    }
}

impl Drop for LiveGuard {
    fn drop(&mut self) {
        let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = live.get_mut(&self.id) {
            // A revoked entry is gone, maybe replaced by a later one: leave that alone.
            if e.generation != self.generation {
                return;
            }
            e.count -= 1;
            if e.count == 0 {
                live.remove(&self.id);
            }
        }
    }
}

/// The pairing file and this daemon's codes.
pub struct Pairings {
    file: PathBuf,
    codes: Mutex<Codes>,
    live: Live,
    /// Woken whenever a code is spent (for `browserctl pair`, which waits for its code).
    changed: tokio::sync::Notify,
}

impl Pairings {
    pub fn new(file: PathBuf) -> Pairings {
        Pairings {
            file,
            codes: Mutex::default(),
            changed: tokio::sync::Notify::new(),
            live: Live::default(),
        }
    }

    /// Notes a connection that proved pairing `id`, until the guard is dropped.
    pub fn connected(&self, id: &str) -> LiveGuard {
        static GENERATION: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        let e = live.entry(id.to_owned()).or_insert_with(|| LiveEntry {
            token: CancellationToken::new(),
            count: 0,
            generation: GENERATION.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        });
        e.count += 1;
        LiveGuard {
            live: self.live.clone(),
            id: id.to_owned(),
            token: e.token.clone(),
            generation: e.generation,
        }
    }

    /// Closes this daemon's connections that proved pairing `id`; how many there were.
    fn disconnect(&self, id: &str) -> usize {
        let entry = self
            .live
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(id);
        entry.map_or(0, |e| {
            e.token.cancel();
            e.count
        })
    }

    pub fn file(&self) -> &Path {
        &self.file
    }

    fn codes(&self) -> std::sync::MutexGuard<'_, Codes> {
        self.codes.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A fresh code, valid for [`CODE_TTL`].
    pub fn new_code(&self) -> NewCode {
        let secret = CodeSecret::random();
        let id = secret.id();
        let code = secret.display();
        let now = Instant::now();
        let mut codes = self.codes();
        codes.expire(now);
        if codes.pending.len() >= MAX_PENDING {
            if let Some(oldest) = codes
                .pending
                .iter()
                .min_by_key(|(_, p)| p.expires)
                .map(|(id, _)| id.clone())
            {
                codes.spend(&oldest, CodeState::Expired);
            }
        }
        codes.pending.insert(
            id.clone(),
            Pending {
                secret,
                expires: now + CODE_TTL,
                tries: 0,
            },
        );
        NewCode {
            code,
            id,
            expires_in: CODE_TTL,
        }
    }

    /// The secret of a pending code, for one handshake (each counts against [`CODE_TRIES`]).
    pub fn code_secret(&self, id: &str) -> Result<CodeSecret, AuthErrorCode> {
        let mut codes = self.codes();
        codes.expire(Instant::now());
        let Some(p) = codes.pending.get_mut(id) else {
            return Err(match codes.state(id) {
                CodeState::Paired(_) => AuthErrorCode::CodeUsed,
                CodeState::Expired | CodeState::Burned => AuthErrorCode::CodeExpired,
                CodeState::Pending | CodeState::Unknown => AuthErrorCode::UnknownCode,
            });
        };
        p.tries += 1;
        let secret = p.secret.clone();
        if p.tries >= CODE_TRIES {
            // This handshake may still finish; nobody gets another.
            codes.spend(id, CodeState::Burned);
            self.changed.notify_waiters();
        }
        Ok(secret)
    }

    /// A peer proved it does not hold the code it named: nobody gets to try it again.
    pub fn burn_code(&self, id: &str) {
        let mut codes = self.codes();
        if codes.pending.contains_key(id) {
            codes.spend(id, CodeState::Burned);
            self.changed.notify_waiters();
        }
    }

    /// The browser proved it holds the code: the code is spent and the pairing saved.
    pub fn complete_code(
        &self,
        id: &str,
        secret: &CodeSecret,
        browser_nonce: &Nonce,
        daemon_nonce: &Nonce,
        browser: BrowserLabel,
    ) -> Result<PairingInfo, AuthErrorCode> {
        {
            // A code serves one pairing, even if two handshakes raced to the end with it.
            let mut codes = self.codes();
            match codes.state(id) {
                CodeState::Paired(_) => return Err(AuthErrorCode::CodeUsed),
                CodeState::Pending | CodeState::Burned => {}
                CodeState::Expired => return Err(AuthErrorCode::CodeExpired),
                CodeState::Unknown => return Err(AuthErrorCode::UnknownCode),
            }
            codes.spend(id, CodeState::Burned);
        }
        let (key, pairing_id) = pairing_from_code(secret, browser_nonce, daemon_nonce);
        let pairing = Pairing {
            id: pairing_id,
            key: b64(&key),
            created_at: crate::time::now_rfc3339(),
            browser,
        };
        let info = PairingInfo {
            id: pairing.id.clone(),
            created_at: pairing.created_at.clone(),
            browser: pairing.browser.clone(),
        };
        let saved = self.update(|all| {
            all.retain(|p| p.id != pairing.id);
            // Oldest first out: a user who pairs browsers forever keeps the newest.
            while all.len() >= MAX_PAIRINGS {
                all.remove(0);
            }
            all.push(pairing);
            true
        });
        if let Err(e) = saved {
            tracing::error!(file = %self.file.display(), error = %e, "could not save a pairing");
            return Err(AuthErrorCode::Unavailable);
        }
        self.codes().spend(id, CodeState::Paired(info.clone()));
        self.changed.notify_waiters();
        tracing::info!(pairing = %info.id, browser = %info.browser.name, "paired a browser");
        Ok(info)
    }

    /// What became of a code.
    pub fn code_state(&self, id: &str) -> CodeState {
        let mut codes = self.codes();
        codes.expire(Instant::now());
        codes.state(id)
    }

    /// Waits until the code is no longer pending, or `timeout`.
    pub async fn wait_code(&self, id: &str, timeout: Duration) -> CodeState {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let state = self.code_state(id);
            if state != CodeState::Pending {
                return state;
            }
            // Expiry happens with no event: look again by then at the latest.
            let next = deadline.min(tokio::time::Instant::now() + Duration::from_secs(1));
            if tokio::time::timeout_at(next, notified).await.is_err()
                && tokio::time::Instant::now() >= deadline
            {
                return self.code_state(id);
            }
        }
    }

    /// The key of a pairing, read from the file now.
    pub fn pairing_key(&self, id: &str) -> Result<[u8; 32], AuthErrorCode> {
        let all = self.read().map_err(|e| {
            tracing::error!(file = %self.file.display(), error = %e, "could not read the pairing file");
            AuthErrorCode::Unavailable
        })?;
        all.iter()
            .find(|p| p.id == id)
            .and_then(|p| unb64::<32>(&p.key))
            .ok_or(AuthErrorCode::UnknownPairing)
    }

    pub fn list(&self) -> io::Result<Vec<PairingInfo>> {
        Ok(self
            .read()?
            .into_iter()
            .map(|p| PairingInfo {
                id: p.id,
                created_at: p.created_at,
                browser: p.browser,
            })
            .collect())
    }

    /// Removes a pairing and closes this daemon's connections that proved it (another
    /// daemon of the user refuses it from its next handshake on); `Ok(None)` when there was
    /// none with that id, else how many connections were closed.
    pub fn revoke(&self, id: &str) -> io::Result<Option<usize>> {
        let mut found = false;
        self.update(|all| {
            let before = all.len();
            all.retain(|p| p.id != id);
            found = all.len() != before;
            found
        })?;
        if !found {
            return Ok(None);
        }
        let closed = self.disconnect(id);
        tracing::info!(pairing = %id, closed, "revoked a pairing");
        Ok(Some(closed))
    }

    /// The pairings on disk; a missing file is none.
    fn read(&self) -> io::Result<Vec<Pairing>> {
        let Some(dir) = self.file.parent() else {
            return Ok(Vec::new());
        };
        match crate::trust::check(dir) {
            Ok(_) => {}
            Err(e) if e.reason == crate::trust::Reason::Missing => return Ok(Vec::new()),
            Err(e) => return Err(e.into()),
        }
        let mut f = match OpenOptions::new()
            .read(true)
            .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
            .open(&self.file)
        {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let meta = f.metadata()?;
        if !meta.is_file()
            || meta.uid() != nix::unistd::geteuid().as_raw()
            || meta.mode() & 0o077 != 0
            || meta.len() > MAX_FILE
        {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "{} is not a private file of ours (it must be ours, mode 600, under 1 MiB)",
                    self.file.display()
                ),
            ));
        }
        let mut text = Vec::new();
        f.read_to_end(&mut text)?;
        let parsed: File1 = serde_json::from_slice(&text).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: {e}", self.file.display()),
            )
        })?;
        Ok(parsed.pairings)
    }

    /// Read-modify-write under the lock; `change` says whether there is anything to write.
    fn update(&self, change: impl FnOnce(&mut Vec<Pairing>) -> bool) -> io::Result<()> {
        let dir = self
            .file
            .parent()
            .ok_or_else(|| io::Error::other("the pairing file has no directory"))?;
        crate::trust::ensure(dir).map_err(io::Error::from)?;
        let lock = OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .custom_flags(nix::libc::O_NOFOLLOW)
            .open(dir.join(".pairings.lock"))?;
        let _lock = nix::fcntl::Flock::lock(lock, nix::fcntl::FlockArg::LockExclusive)
            .map_err(|(_, e)| io::Error::from(e))?;
        let mut all = self.read()?;
        if !change(&mut all) {
            return Ok(());
        }
        let body = File1 {
            version: 1,
            pairings: all,
        };
        let mut text = serde_json::to_vec_pretty(&body).expect("JSON");
        text.push(b'\n');
        let mut suffix = [0u8; 6];
        getrandom::fill(&mut suffix).map_err(|e| io::Error::other(e.to_string()))?;
        let tmp = dir.join(format!(
            ".pairings.{}.tmp",
            suffix
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        ));
        let result = (|| {
            let mut f: File = OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .custom_flags(nix::libc::O_NOFOLLOW)
                .open(&tmp)?;
            f.write_all(&text)?;
            f.sync_all()?;
            fs::rename(&tmp, &self.file)
        })();
        if result.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::auth::nonce;
    use std::os::unix::fs::PermissionsExt;

    fn store() -> (tempfile::TempDir, Pairings) {
        let tmp = tempfile::tempdir().unwrap();
        let p = Pairings::new(tmp.path().join("state/browser-mcp/pairings.json"));
        (tmp, p)
    }

    fn label() -> BrowserLabel {
        BrowserLabel {
            name: "Chromium".into(),
            version: "156".into(),
            session_id: "s1".into(),
        }
    }

    #[test]
    fn a_code_makes_one_pairing_that_another_daemon_of_the_user_knows() {
        let (tmp, a) = store();
        let code = a.new_code();
        assert_eq!(code.code.len(), 19);
        let secret = a.code_secret(&code.id).unwrap();
        assert_eq!(secret, CodeSecret::parse(&code.code).unwrap());
        let (nb, nd) = (nonce(), nonce());
        let info = a
            .complete_code(&code.id, &secret, &nb, &nd, label())
            .unwrap();
        assert_eq!(info.browser, label());
        // The browser derives the same key from the code and the nonces.
        let (key, id) = pairing_from_code(&secret, &nb, &nd);
        assert_eq!(id, info.id);
        assert_eq!(a.pairing_key(&info.id).unwrap(), key);
        // Used: a replay is refused, by name.
        assert_eq!(a.code_secret(&code.id), Err(AuthErrorCode::CodeUsed));
        assert_eq!(
            a.complete_code(&code.id, &secret, &nb, &nd, label()),
            Err(AuthErrorCode::CodeUsed)
        );
        assert!(matches!(a.code_state(&code.id), CodeState::Paired(ref p) if p.id == info.id));
        // The file is private, in a private directory, and a second daemon (same file) knows
        // the pairing: it survives restarts.
        let meta = fs::metadata(a.file()).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        let dir = fs::metadata(a.file().parent().unwrap()).unwrap();
        assert_eq!(dir.permissions().mode() & 0o777, 0o700);
        let b = Pairings::new(a.file().to_path_buf());
        assert_eq!(b.pairing_key(&info.id).unwrap(), key);
        assert_eq!(b.list().unwrap().len(), 1);
        // Revoked by one daemon, unknown to both; its live connections are told.
        let guard = b.connected(&info.id);
        let other = b.connected(&info.id);
        drop(other);
        assert_eq!(b.revoke(&info.id).unwrap(), Some(1));
        assert!(guard.revoked().is_cancelled());
        assert_eq!(b.revoke(&info.id).unwrap(), None, "only once");
        assert_eq!(a.pairing_key(&info.id), Err(AuthErrorCode::UnknownPairing));
        assert!(a.list().unwrap().is_empty());
        drop(tmp);
    }

    #[test]
    fn codes_are_unknown_expired_or_burned() {
        let (_tmp, p) = store();
        assert_eq!(
            p.code_secret("0123456789abcdef"),
            Err(AuthErrorCode::UnknownCode)
        );
        let code = p.new_code();
        // A wrong proof burns it at once.
        p.code_secret(&code.id).unwrap();
        p.burn_code(&code.id);
        assert_eq!(p.code_secret(&code.id), Err(AuthErrorCode::CodeExpired));
        assert_eq!(p.code_state(&code.id), CodeState::Burned);
        // So do too many handshakes; the last one may still finish.
        let code = p.new_code();
        for _ in 0..CODE_TRIES {
            p.code_secret(&code.id).unwrap();
        }
        assert_eq!(p.code_secret(&code.id), Err(AuthErrorCode::CodeExpired));
        // An expired code is said to be so.
        let code = p.new_code();
        p.codes().pending.get_mut(&code.id).unwrap().expires = Instant::now();
        assert_eq!(p.code_secret(&code.id), Err(AuthErrorCode::CodeExpired));
        assert_eq!(p.code_state(&code.id), CodeState::Expired);
        // Pending codes are capped; the oldest goes first.
        let first = p.new_code();
        for _ in 0..MAX_PENDING {
            p.new_code();
        }
        assert_eq!(p.code_state(&first.id), CodeState::Expired);
    }

    #[test]
    fn a_file_others_could_touch_is_refused() {
        let (_tmp, p) = store();
        let code = p.new_code();
        let secret = p.code_secret(&code.id).unwrap();
        let info = p
            .complete_code(&code.id, &secret, &nonce(), &nonce(), label())
            .unwrap();
        fs::set_permissions(p.file(), fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(p.pairing_key(&info.id), Err(AuthErrorCode::Unavailable));
        assert!(p.list().unwrap_err().to_string().contains("mode 600"));
        fs::set_permissions(p.file(), fs::Permissions::from_mode(0o600)).unwrap();
        let dir = p.file().parent().unwrap();
        fs::set_permissions(dir, fs::Permissions::from_mode(0o777)).unwrap();
        assert_eq!(p.pairing_key(&info.id), Err(AuthErrorCode::Unavailable));
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700)).unwrap();
        assert!(p.pairing_key(&info.id).is_ok());
    }

    #[tokio::test]
    async fn a_waiter_hears_of_its_code() {
        let (_tmp, p) = store();
        let p = std::sync::Arc::new(p);
        let code = p.new_code();
        let waiter = {
            let (p, id) = (p.clone(), code.id.clone());
            tokio::spawn(async move { p.wait_code(&id, Duration::from_secs(10)).await })
        };
        tokio::task::yield_now().await;
        let secret = p.code_secret(&code.id).unwrap();
        let info = p
            .complete_code(&code.id, &secret, &nonce(), &nonce(), label())
            .unwrap();
        assert_eq!(waiter.await.unwrap(), CodeState::Paired(info));
        let other = p.new_code();
        assert_eq!(
            p.wait_code(&other.id, Duration::from_millis(50)).await,
            CodeState::Pending
        );
    }
}
