import ArgumentParser
import CanopyOutbound
import Foundation

/// `canopy serve`'s outbound check (docs/SECURITY.md, "Outbound requests"):
/// which webhook and Web Push URLs users may register and the deliverer
/// may call, beyond public https on port 443.
struct OutboundOptions: ParsableArguments {
    private static func environment(_ name: String) -> [String] {
        (ProcessInfo.processInfo.environment[name] ?? "").split(separator: ",").map(String.init).filter { !$0.isEmpty }
    }

    @Option(name: .customLong("outbound-allow"), parsing: .singleValue, help: ArgumentHelp(
        "A destination webhooks and Web Push endpoints may name although it is inside your network: a host name, an address or a range (10.1.0.0/16); repeat, or give a comma-separated list. Allowed destinations may use any port and plain http. Default: none, so loopback, private, link-local, CGNAT, multicast and metadata addresses are refused (env CANOPY_OUTBOUND_ALLOW).",
        valueName: "host|address|range"))
    var allowFlags: [String] = []

    @Option(name: .customLong("outbound-ports"), help: ArgumentHelp(
        "Comma-separated ports webhooks and Web Push endpoints may use on the public internet (default 443; env CANOPY_OUTBOUND_PORTS).",
        valueName: "ports"))
    var portsFlag: String?

    var allowTexts: [String] {
        let given = allowFlags.flatMap { $0.split(separator: ",").map(String.init) }.filter { !$0.isEmpty }
        return given.isEmpty ? Self.environment("CANOPY_OUTBOUND_ALLOW") : given
    }

    var portTexts: [String] {
        portsFlag.map { $0.split(separator: ",").map(String.init) } ?? Self.environment("CANOPY_OUTBOUND_PORTS")
    }

    func validate() throws {
        _ = try policy()
    }

    func policy() throws -> OutboundPolicy {
        var rules: [OutboundRule] = []
        for text in allowTexts {
            do {
                rules.append(try OutboundRule(parsing: text))
            } catch {
                throw ValidationError("--outbound-allow: \(error.message)")
            }
        }
        var ports: Set<Int> = []
        for text in portTexts {
            guard let port = Int(text.trimmingCharacters(in: .whitespaces)), (1...65535).contains(port) else {
                throw ValidationError("--outbound-ports: '\(text)' is not a port (1 to 65535)")
            }
            ports.insert(port)
        }
        return OutboundPolicy(allowed: rules, ports: ports.isEmpty ? [443] : ports)
    }
}
