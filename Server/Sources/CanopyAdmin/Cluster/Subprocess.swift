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

    /// ``run(_:_:environment:)`` without holding a cooperative thread while
    /// the program runs (``Started/exit()``): for async callers.
    public static func output(of executable: String, _ arguments: [String], environment: [String: String]? = nil) async throws -> Result {
        try await start(executable, arguments, environment: environment).exit()
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

        /// Waits for the exit on a thread of its own, so the caller's task
        /// holds none of Swift's cooperative threads meanwhile: there are as
        /// many as cores (two here), and two callers blocked in `wait()` at
        /// once stop every task of the process (a gateway in it too).
        public func exit() async throws -> Result {
            try await withCheckedThrowingContinuation { continuation in
                Thread { continuation.resume(with: Swift.Result { try self.wait() }) }.start()
            }
        }

        /// Waits for the exit without holding a thread, for at most `limit`;
        /// then the program is killed (SIGKILL) and its status is 128 + 9.
        public func wait(within limit: Duration) async throws -> Result {
            let deadline = ContinuousClock.now + limit
            while true {
                if let status = try Subprocess.exited(pid: pid, executable: executable) {
                    defer { try? FileManager.default.removeItem(atPath: outputPath) }
                    return Result(status: status, output: (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "")
                }
                if ContinuousClock.now >= deadline { kill(pid, SIGKILL) }
                try? await Task.sleep(for: .milliseconds(20))
            }
        }

        /// Waits for the exit, polling, for at most `limit`; then kills the
        /// program (SIGKILL), reaps it and answers nil. For `defer` blocks,
        /// which cannot await: the thread is held for `limit` at most.
        public func waitBlocking(within limit: Duration) -> Result? {
            let deadline = ContinuousClock.now + limit
            while true {
                let exited: Int32?
                do { exited = try Subprocess.exited(pid: pid, executable: executable) } catch { return nil }
                if let status = exited {
                    defer { try? FileManager.default.removeItem(atPath: outputPath) }
                    guard ContinuousClock.now <= deadline else { return nil }
                    return Result(status: status, output: (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "")
                }
                if ContinuousClock.now > deadline { kill(pid, SIGKILL) }
                usleep(20_000)
            }
        }

        /// SIGTERM, up to `grace` for the exit (holding the thread), then SIGKILL.
        public func stopBlocking(grace: Duration = .seconds(20)) {
            kill(pid, SIGTERM)
            _ = waitBlocking(within: grace)
        }

        /// Asks the program to stop (SIGTERM) and waits up to `grace` for
        /// it; then kills it (SIGKILL). Never waits on a program that
        /// does not stop.
        @discardableResult
        public func stop(grace: Duration = .seconds(20)) async -> Result? {
            kill(pid, SIGTERM)
            return try? await wait(within: grace)
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
        // The child gets standard input, output and error and nothing else:
        // a descriptor open here meanwhile (a pipe, a socket, a connection)
        // must not live on in a server the program starts, where it would
        // keep the other end from ever seeing its end of file.
        closeDescriptorsFromThree(&actions)
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

    /// The exit status if the program has ended (reaping it), else nil.
    static func exited(pid: pid_t, executable: String) throws -> Int32? {
        var status: Int32 = 0
        while true {
            let reaped = waitpid(pid, &status, WNOHANG)
            if reaped == pid { break }
            if reaped == 0 { return nil }
            guard errno == EINTR else {
                throw StoreError(.clusterFailed, "waiting for \(executable) failed: \(String(cString: strerror(errno)))")
            }
        }
        if status & 0x7f == 0 { return (status >> 8) & 0xff }
        return 128 + (status & 0x7f)
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later),
    /// which Swift's Glibc module does not declare.
    private static let addCloseFrom: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
    }()

    private static func closeDescriptorsFromThree(_ actions: inout posix_spawn_file_actions_t) {
        #if canImport(Glibc)
        _ = addCloseFrom?(&actions, 3)
        #endif
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
