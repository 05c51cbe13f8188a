import CanopyAdmin
import CanopyRequestStore
import CanopyTestSupport
import Foundation
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Whether this machine can make the network-fault lab: root (namespaces
/// and veth pairs), iproute2 and PostgreSQL's server programs.
let networkLabAvailable: Bool = {
    getuid() == 0 && NetworkLab.ip != nil
        && ((try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql"))?.isEmpty == false)
}()

struct NetworkLabFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// `scripts/netns-lab.sh` from a test: a gateway's namespace joined by veth
/// pairs to a primary's and a replica's, each server also on a Unix socket
/// in the lab's folder (where the test sets up and checks the database
/// while a link is cut). Every address is inside the lab's namespaces.
struct NetworkLab: Sendable {
    static let script = "\(Repository.root)/scripts/netns-lab.sh"
    static let ip = ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"].first { FileManager.default.isExecutableFile(atPath: $0) }

    let directory: String
    let gatewayNamespace: String
    /// From the gateway's namespace, over the links.
    let primaryURL: String
    let replicaURL: String
    /// From anywhere, over the servers' Unix sockets.
    let admin: DatabaseEndpoint
    let replicaAdmin: DatabaseEndpoint

    static func up() async throws -> NetworkLab {
        let directory = "/tmp/canopy-net-\(UUID().uuidString.prefix(8).lowercased())"
        // Making two clusters takes a while: waited for without holding a
        // cooperative thread, which the suites beside this one need.
        let result = try await runAwaiting(script, ["up", directory])
        guard result.succeeded else {
            _ = try? run(script, ["down", directory])
            throw NetworkLabFailure("scripts/netns-lab.sh up failed:\n\(result.output)")
        }
        var values: [String: String] = [:]
        for line in result.output.split(separator: "\n") {
            guard let equals = line.firstIndex(of: "=") else { continue }
            values[String(line[..<equals])] = String(line[line.index(after: equals)...]).trimmingCharacters(in: CharacterSet(charactersIn: "'"))
        }
        guard let namespace = values["GATEWAY_NS"], let primary = values["PRIMARY_URL"], let replica = values["REPLICA_URL"],
              let admin = values["ADMIN_URL"], let replicaAdmin = values["REPLICA_ADMIN_URL"]
        else { throw NetworkLabFailure("scripts/netns-lab.sh up said:\n\(result.output)") }
        return NetworkLab(directory: directory, gatewayNamespace: namespace, primaryURL: primary, replicaURL: replica,
                          admin: try DatabaseEndpoint(url: admin), replicaAdmin: try DatabaseEndpoint(url: replicaAdmin))
    }

    func down() {
        _ = try? Self.run(Self.script, ["down", directory])
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// `cut`, `heal`, `freeze` or `thaw` of `server` (primary or replica).
    func command(_ verb: String, _ server: String = "primary") throws {
        let result = try Self.run(Self.script, [verb, directory, server])
        guard result.succeeded else { throw NetworkLabFailure("scripts/netns-lab.sh \(verb) \(server) failed:\n\(result.output)") }
    }

    /// The primary forgets the TCP connection from the gateway's `port` (as
    /// a server that restarted behind a partition has): its end is
    /// destroyed, and the reset it sends is lost on the cut link, so the
    /// gateway's end stays open with nobody behind it.
    func forgetConnection(fromGatewayPort port: Int) throws {
        let namespace = gatewayNamespace.replacingOccurrences(of: "-gw", with: "-pri")
        let result = try Self.run(Self.ip!, ["netns", "exec", namespace, "ss", "-K", "-tn", "dst", "10.231.1.1", "dport", "=", ":\(port)"])
        guard result.succeeded else { throw NetworkLabFailure("ss -K failed:\n\(result.output)") }
    }

    /// ``run(_:_:within:)`` polling from a task rather than holding a thread.
    static func runAwaiting(_ program: String, _ arguments: [String], within limit: Duration = .seconds(120)) async throws -> Subprocess.Result {
        let result = try await Subprocess.start(program, arguments).wait(within: limit)
        guard result.status != 128 + SIGKILL else {
            throw NetworkLabFailure("\(program) \(arguments.joined(separator: " ")) did not end within \(limit); killed")
        }
        return result
    }

    /// Runs a lab command to its end, for at most `limit` (then it is
    /// killed): a command that hangs fails its test instead of holding a
    /// thread of the test run for ever.
    static func run(_ program: String, _ arguments: [String], within limit: Duration = .seconds(120)) throws -> Subprocess.Result {
        let started = try Subprocess.start(program, arguments)
        guard let result = started.waitBlocking(within: limit) else {
            throw NetworkLabFailure("\(program) \(arguments.joined(separator: " ")) did not end within \(limit); killed")
        }
        return result
    }
}

/// Reads lines from a pipe, waiting for each at most a given time: a
/// program that stops answering fails its test rather than hanging it.
struct LineReader {
    let handle: FileHandle
    var pending = Data()

    init(_ handle: FileHandle, pending: Data = Data()) {
        self.handle = handle
        self.pending = pending
    }

    /// The next line; nil at the end of the output or when `limit` passes first.
    mutating func next(within limit: Duration) -> String? {
        let deadline = ContinuousClock.now + limit
        while true {
            if let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                pending = Data(pending[pending.index(after: newline)...])
                return line
            }
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return nil }
            var descriptor = pollfd(fd: handle.fileDescriptor, events: Int16(POLLIN), revents: 0)
            let milliseconds = Int32(min(left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1, 1000))
            let ready = poll(&descriptor, 1, milliseconds)
            if ready == 0 || (ready == -1 && errno == EINTR) { continue }
            guard ready > 0 else { return nil }
            let chunk = handle.availableData
            if chunk.isEmpty { return nil }
            pending.append(chunk)
        }
    }
}

/// `Server/Tests/python/fault_proxy.py`: a TCP proxy told on its standard input to
/// pass, delay, throttle, black-hole or reset what it carries.
final class FaultProxy: @unchecked Sendable {
    let process: Process
    private let input: Pipe
    private let output: Pipe
    private var reader: LineReader
    private let lock = NSLock()
    let port: Int
    /// How long a command's answer may take.
    static let answerLimit = Duration.seconds(30)

    /// Listens on 127.0.0.1 (a free port) and forwards to `target`
    /// (`HOST:PORT` or `unix:PATH`), connecting from `namespace` if given.
    init(to target: String, fromNamespace namespace: String? = nil) throws {
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        var arguments = ["python3", "\(Repository.root)/Server/Tests/python/fault_proxy.py", "--listen", "127.0.0.1:0", "--connect", target]
        if let namespace { arguments += ["--connect-netns", namespace] }
        process.arguments = arguments
        input = Pipe()
        output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        reader = LineReader(output.fileHandleForReading)
        let first = reader.next(within: Self.answerLimit)
        guard let first, first.hasPrefix("PORT="), let port = Int(first.dropFirst(5)) else {
            kill(process.processIdentifier, SIGKILL)
            throw NetworkLabFailure("fault_proxy.py did not start: \(first ?? "no output")")
        }
        self.port = port
    }

    deinit {
        try? input.fileHandleForWriting.close()
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    /// Sends one command and returns its answer (`ok ...`).
    @discardableResult
    func send(_ command: String) throws -> String {
        lock.lock()
        defer { lock.unlock() }
        input.fileHandleForWriting.write(Data((command + "\n").utf8))
        guard let answer = reader.next(within: Self.answerLimit), answer.hasPrefix("ok") else {
            throw NetworkLabFailure("fault_proxy.py refused \(command), or did not answer within \(Self.answerLimit)")
        }
        return answer
    }

    /// Ends the proxy: its input closed (it quits), then killed; never
    /// waits on it (Foundation reaps it).
    func stop() {
        try? input.fileHandleForWriting.close()
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
}

/// `canopy serve` run inside the lab's gateway namespace on its loopback,
/// reached from the test through a ``FaultProxy`` that connects from there.
final class NamespacedGateway: @unchecked Sendable {
    let started: Subprocess.Started
    let proxy: FaultProxy
    var url: String { "http://127.0.0.1:\(proxy.port)" }
    let logFile: String

    init(lab: NetworkLab, extra: [String] = []) throws {
        logFile = "\(lab.directory)/gateway.log"
        let port = 8080
        started = try Subprocess.start(NetworkLab.ip!, [
            "netns", "exec", lab.gatewayNamespace, CanopyBinary.path, "serve",
            "--database-url", lab.primaryURL, "--migrations-dir", TestDatabase.migrationsDirectory,
            "--host", "127.0.0.1", "--port", String(port), "--no-console", "--rate-limit", "0",
        ] + extra)
        proxy = try FaultProxy(to: "127.0.0.1:\(port)", fromNamespace: lab.gatewayNamespace)
    }

    /// Waits until `/health` answers 200 through the proxy.
    func waitUntilServing() async throws -> Bool {
        try await CanopyBinary.waitUntilAnswering("\(url)/health", attempts: 300)
    }

    /// What the process has written so far.
    var log: String {
        (try? String(contentsOfFile: started.outputPath, encoding: .utf8)) ?? ""
    }

    /// SIGTERM, and returns: a thread of its own waits for the exit, up to
    /// 45 s, then SIGKILLs (the gateway bounds its own stop at 30 s), so
    /// no thread of Swift's cooperative pool is held meanwhile. A stop that
    /// was not clean is printed with the end of the gateway's log.
    func stop() {
        kill(started.pid, SIGTERM)
        let log = self.log
        let started = self.started
        Thread {
            let result = started.waitBlocking(within: .seconds(45))
            if result?.status != 0 {
                print("the namespaced gateway did not stop cleanly (\(result.map { "status \($0.status)" } ?? "killed after 45 s")):\n\(log.suffix(2000))")
            }
        }.start()
        proxy.stop()
    }
}

/// A program spoken to in JSON lines on its standard input and output
/// (clients/js/test/fault/commit-cut.js): `ask` sends one and waits for
/// the next line of the `type` expected, keeping the others (its log).
final class JSONLinesProcess: @unchecked Sendable {
    /// One line read: a JSON object, never mutated after it is read.
    struct Line: @unchecked Sendable {
        let fields: [String: Any]
        subscript(key: String) -> Any? { fields[key] }
    }

    let process: Process
    private let input = Pipe()
    private let output = Pipe()
    private var reader: LineReader
    private(set) var log: [String] = []

    init(_ executable: String, _ arguments: [String]) throws {
        process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardInput = input
        process.standardOutput = output
        reader = LineReader(output.fileHandleForReading)
        try process.run()
    }

    deinit {
        try? input.fileHandleForWriting.close()
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    /// The next line whose `type` is `type`; nil when the program ended
    /// first, or when `limit` passed (the program is then killed).
    func next(_ type: String, within limit: Duration) -> Line? {
        let deadline = ContinuousClock.now + limit
        while let text = reader.next(within: deadline - ContinuousClock.now) {
            let object = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any]
            if let object, object["type"] as? String == type { return Line(fields: object) }
            log.append(text)
        }
        if process.isRunning {
            log.append("(no \(type) within \(limit): killed)")
            kill(process.processIdentifier, SIGKILL)
        }
        return nil
    }

    func send(_ message: [String: Any]) throws {
        input.fileHandleForWriting.write(try JSONSerialization.data(withJSONObject: message) + Data("\n".utf8))
    }

    /// Waits (off the cooperative pool) for the next line of `type`, at
    /// most `limit`.
    func expect(_ type: String, within limit: Duration = .seconds(120)) async -> Line? {
        await withCheckedContinuation { (continuation: CheckedContinuation<Line?, Never>) in
            DispatchQueue.global().async {
                continuation.resume(returning: self.next(type, within: limit))
            }
        }
    }

    /// Sends `message` and waits for the answer of `type`; after `limit`
    /// the program is ended and the answer is nil.
    func ask(_ message: [String: Any], expecting type: String, within limit: Duration = .seconds(120)) async throws -> Line? {
        try send(message)
        return await expect(type, within: limit)
    }
}
