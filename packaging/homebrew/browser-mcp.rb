# Homebrew formula for browser-mcp (macOS and Linux).
#
# homepage, url and sha256 name the project's home and a release's source tarball;
# packaging/homebrew/fill.sh sets them:
#   packaging/homebrew/fill.sh HOMEPAGE TARBALL_URL browser-mcp-0.1.0.tar.gz
# Then: brew install --build-from-source ./packaging/homebrew/browser-mcp.rb
#       brew services start browser-mcp
class BrowserMcp < Formula
  desc "Tools in browser tabs for shell scripts, pipelines and AI agents"
  homepage "@HOMEPAGE@"
  url "@URL@"
  sha256 "@SHA256@"
  license any_of: ["MIT", "Apache-2.0"]

  depends_on "rust" => :build

  def install
    system "cargo", "install", *std_cargo_args
    man1.install "man/browserctl.1", "man/browser-mcpd.1"
    # The extension browsers the daemon launches load (it looks in ../share beside its binary).
    (share/"browser-mcp").install "extension"
    generate_completions_from_executable(bin/"browserctl", "completions")
    # The systemd user units, for Linux users who start it with systemctl.
    (lib/"systemd/user").install "systemd/browser-mcpd.service", "systemd/browser-mcpd.socket" if OS.linux?
    inreplace lib/"systemd/user/browser-mcpd.service", "/usr/bin/browser-mcpd", opt_bin/"browser-mcpd" if OS.linux?
  end

  # `brew services start browser-mcp`: a LaunchAgent on macOS, a systemd user unit on Linux.
  service do
    # The daemon rotates its own log file (browser-mcpd.log.1 past 10 MiB); launchd does not.
    run [opt_bin/"browser-mcpd", "--log-file", var/"log/browser-mcpd.log"]
    keep_alive successful_exit: false
    log_path var/"log/browser-mcpd.stderr.log"
    error_log_path var/"log/browser-mcpd.stderr.log"
    environment_variables BROWSER_MCP_LOG_LEVEL: "info"
  end

  test do
    assert_match version.to_s, shell_output("#{bin}/browser-mcpd --version")
    assert_match "port = 8765", shell_output("#{bin}/browser-mcpd --print-config")
    # No daemon runs in the test sandbox: doctor reports it and exits 1.
    assert_match "daemon reachable", shell_output("#{bin}/browserctl --socket #{testpath}/none.sock doctor", 1)
  end
end
