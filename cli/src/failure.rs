//! What a command can fail with, and the exit status it maps to.

use std::fmt;
use std::process::ExitCode;

/// A failed command: printed as `cosid: error: [CODE] message`.
#[derive(Debug)]
pub struct Failure {
    code: &'static str,
    message: String,
    usage: bool,
}

impl Failure {
    /// Bad input or settings: exit status 2.
    pub fn usage(code: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            usage: true,
        }
    }

    /// The store or the runtime failed: exit status 1.
    pub fn runtime(code: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            usage: false,
        }
    }

    /// The same failure with `(context)` after its message.
    pub fn context(mut self, context: &str) -> Self {
        self.message = format!("{} ({context})", self.message);
        self
    }

    /// Prints the failure to stderr: `cosid: error: [CODE] message`, or under `--json` one JSON object,
    /// `{"error": {"code": "CODE", "message": "..."}}`.
    pub fn print(&self, json: bool) {
        if json {
            let value = serde_json::json!({
                "error": {"code": self.code, "message": self.message},
            });
            eprintln!("{value}");
        } else {
            eprintln!("cosid: error: {self}");
        }
    }

    /// Whether this is bad input or settings (exit status 2) rather than a failure of the store or the runtime.
    pub fn is_usage(&self) -> bool {
        self.usage
    }

    /// 2 for usage and configuration errors, 1 for everything else.
    pub fn exit_code(&self) -> ExitCode {
        ExitCode::from(if self.usage { 2 } else { 1 })
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}] {}", self.code, self.message)
    }
}

impl From<cosid::Error> for Failure {
    fn from(e: cosid::Error) -> Self {
        cosid::host::HostError::from(e).into()
    }
}

impl From<cosid::host::HostError> for Failure {
    fn from(e: cosid::host::HostError) -> Self {
        use cosid::host::ErrorCode;
        // Settings, layouts and ids are the caller's input; everything else is the store or the runtime.
        let usage = matches!(
            e.code,
            ErrorCode::Config | ErrorCode::Layout | ErrorCode::InvalidId | ErrorCode::UnknownKey
        );
        Self {
            code: e.code.name(),
            message: e.message,
            usage,
        }
    }
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Self {
        Self::runtime("IO", format!("writing the output failed: {e}"))
    }
}
