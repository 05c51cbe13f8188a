import CanopyRequestStore
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Runs a program to completion with posix_spawn and waitpid (Foundation's
/// Process can miss the exit of a child whose own children live on, as
/// pg_ctl's server does). Output goes to a file, not a pipe, so a server the
/// program starts never holds our end open.
public struct Subprocess {
    public struct Result {
        public var status: Int32
        public var output: String
        public var succeeded: Bool { status == 0 }
    }

    /// Runs `executable` and captures its standard output and error.
    static func run(_ executable: String, _ arguments: [String], environment: [String: String]? = nil) throws -> Result {
        let outputPath = FileManager.default.temporaryDirectory
            .appendingPathComponent("canopy-\(UUID().uuidString).out").path
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        let status = try spawn(executable, arguments, environment: environment, outputPath: outputPath)
        let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        return Result(status: status, output: output)
    }

    /// Runs `executable` with this process's standard input, output and error
    /// (for interactive programs such as psql); returns its exit status.
    public static func runInteractive(_ executable: String, _ arguments: [String], environment: [String: String]) throws -> Int32 {
        try spawn(executable, arguments, environment: environment, outputPath: nil)
    }

    /// A started program, to wait for later: lets a caller run several at once.
    public struct Started: Sendable {
        public let pid: pid_t
        let executable: String
        public let outputPath: String

        /// Waits for the exit and returns the status and what it printed.
        public func wait() throws -> Result {
            defer { try? FileManager.default.removeItem(atPath: outputPath) }
            let status = try Subprocess.wait(pid: pid, executable: executable)
            return Result(status: status, output: (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "")
        }
    }

    /// Starts `executable` with its output going to a file; see `Started.wait()`.
    public static func start(_ executable: String, _ arguments: [String], environment: [String: String]? = nil) throws -> Started {
        let outputPath = FileManager.default.temporaryDirectory
            .appendingPathComponent("canopy-\(UUID().uuidString).out").path
        let pid = try launch(executable, arguments, environment: environment, outputPath: outputPath)
        return Started(pid: pid, executable: executable, outputPath: outputPath)
    }

    static func spawn(
        _ executable: String, _ arguments: [String], environment: [String: String]?,
        outputPath: String?
    ) throws -> Int32 {
        let pid = try launch(executable, arguments, environment: environment, outputPath: outputPath)
        return try wait(pid: pid, executable: executable)
    }

    static func launch(
        _ executable: String, _ arguments: [String], environment: [String: String]?,
        outputPath: String?
    ) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if let outputPath {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
            posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            posix_spawn_file_actions_adddup2(&actions, 1, 2)
        }
        let env = (environment.map { ProcessInfo.processInfo.environment.merging($0) { $1 } } ?? ProcessInfo.processInfo.environment)
            .map { "\($0.key)=\($0.value)" }
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = env.map { strdup($0) } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        // The child starts with no signal blocked and every signal at its
        // default: a test runner or SwiftNIO (which ignores SIGPIPE) must not
        // hand their settings on. pg_autoctl's supervisor, for one, hangs on
        // its children's exit without them.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        var all = sigset_t()
        sigfillset(&all)
        sigdelset(&all, SIGKILL)
        sigdelset(&all, SIGSTOP)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var pid = pid_t()
        let spawned = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        guard spawned == 0 else {
            throw StoreError(.clusterFailed, "cannot run \(executable): \(String(cString: strerror(spawned)))")
        }
        return pid
    }

    static func wait(pid: pid_t, executable: String) throws -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 {
            guard errno == EINTR else {
                throw StoreError(.clusterFailed, "waiting for \(executable) failed: \(String(cString: strerror(errno)))")
            }
        }
        // WIFEXITED / WEXITSTATUS, spelled out (they are macros in C).
        if status & 0x7f == 0 { return (status >> 8) & 0xff }
        return 128 + (status & 0x7f)
    }

    /// Finds an executable on PATH.
    public static func which(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for directory in path.split(separator: ":") {
            let candidate = "\(directory)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }
}
