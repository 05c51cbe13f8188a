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
    static let script = "\(TestDatabase.packageRoot)/scripts/netns-lab.sh"
    static let ip = ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"].first { FileManager.default.isExecutableFile(atPath: $0) }

    let directory: String
    let gatewayNamespace: String
    /// From the gateway's namespace, over the links.
    let primaryURL: String
    let replicaURL: String
    /// From anywhere, over the servers' Unix sockets.
    let admin: DatabaseEndpoint
    let replicaAdmin: DatabaseEndpoint

    static func up() throws -> NetworkLab {
        let directory = "/tmp/canopy-net-\(UUID().uuidString.prefix(8).lowercased())"
        let result = try run(script, ["up", directory])
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

    static func run(_ program: String, _ arguments: [String]) throws -> Subprocess.Result {
        try Subprocess.start(program, arguments).wait()
    }
}

/// `Tests/python/fault_proxy.py`: a TCP proxy told on its standard input to
/// pass, delay, throttle, black-hole or reset what it carries.
final class FaultProxy: @unchecked Sendable {
    let process: Process
    private let input: Pipe
    private let output: Pipe
    private var pending = Data()
    private let lock = NSLock()
    let port: Int

    /// Listens on 127.0.0.1 (a free port) and forwards to `target`
    /// (`HOST:PORT` or `unix:PATH`), connecting from `namespace` if given.
    init(to target: String, fromNamespace namespace: String? = nil) throws {
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        var arguments = ["python3", "\(TestDatabase.packageRoot)/Tests/python/fault_proxy.py", "--listen", "127.0.0.1:0", "--connect", target]
        if let namespace { arguments += ["--connect-netns", namespace] }
        process.arguments = arguments
        input = Pipe()
        output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        let (first, rest) = Self.firstLine(of: output)
        pending = rest
        guard let first, first.hasPrefix("PORT="), let port = Int(first.dropFirst(5)) else {
            process.terminate()
            throw NetworkLabFailure("fault_proxy.py did not start: \(first ?? "no output")")
        }
        self.port = port
    }

    private static func firstLine(of pipe: Pipe) -> (String?, Data) {
        var data = Data()
        while true {
            if let newline = data.firstIndex(of: UInt8(ascii: "\n")) {
                return (String(decoding: data[data.startIndex..<newline], as: UTF8.self), Data(data[data.index(after: newline)...]))
            }
            let chunk = pipe.fileHandleForReading.availableData
            if chunk.isEmpty { return (nil, data) }
            data.append(chunk)
        }
    }

    deinit {
        try? input.fileHandleForWriting.close()
        process.terminate()
    }

    private func readLine() -> String? {
        while true {
            if let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                pending = Data(pending[pending.index(after: newline)...])
                return line
            }
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { return nil }
            pending.append(chunk)
        }
    }

    /// Sends one command and returns its answer (`ok ...`).
    @discardableResult
    func send(_ command: String) throws -> String {
        lock.lock()
        defer { lock.unlock() }
        input.fileHandleForWriting.write(Data((command + "\n").utf8))
        guard let answer = readLine(), answer.hasPrefix("ok") else {
            throw NetworkLabFailure("fault_proxy.py refused \(command)")
        }
        return answer
    }

    func stop() {
        try? input.fileHandleForWriting.close()
        process.terminate()
        process.waitUntilExit()
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

    func stop() {
        kill(started.pid, SIGTERM)
        _ = try? started.wait()
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
    private var pending = Data()
    private(set) var log: [String] = []

    init(_ executable: String, _ arguments: [String]) throws {
        process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardInput = input
        process.standardOutput = output
        try process.run()
    }

    deinit {
        try? input.fileHandleForWriting.close()
        if process.isRunning { process.terminate() }
    }

    /// The next line whose `type` is `type`; nil when the program ended first.
    func next(_ type: String) -> Line? {
        while true {
            if let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = Data(pending[pending.startIndex..<newline])
                pending = Data(pending[pending.index(after: newline)...])
                let object = (try? JSONSerialization.jsonObject(with: line)) as? [String: Any]
                if let object, object["type"] as? String == type { return Line(fields: object) }
                log.append(String(decoding: line, as: UTF8.self))
                continue
            }
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { return nil }
            pending.append(chunk)
        }
    }

    func send(_ message: [String: Any]) throws {
        input.fileHandleForWriting.write(try JSONSerialization.data(withJSONObject: message) + Data("\n".utf8))
    }

    /// Sends `message` and waits (off the cooperative pool) for the answer
    /// of `type`; after `limit` the program is ended and the answer is nil.
    func ask(_ message: [String: Any], expecting type: String, within limit: TimeInterval = 120) async throws -> Line? {
        try send(message)
        let done = Atomic<Bool>(false)
        DispatchQueue.global().asyncAfter(deadline: .now() + limit) { [process] in
            if !done.load(ordering: .relaxed), process.isRunning { process.terminate() }
        }
        return await withCheckedContinuation { (continuation: CheckedContinuation<Line?, Never>) in
            DispatchQueue.global().async {
                let line = self.next(type)
                done.store(true, ordering: .relaxed)
                continuation.resume(returning: line)
            }
        }
    }
}
