import ArgumentParser
import CanopyKit
import Foundation

/// Where the server is, who is asking, and which local file holds their copy.
struct ConnectionOptions: ParsableArguments {
    @Option(help: "The Canopy gateway (env FASTING_SERVER).")
    var server: String = ProcessInfo.processInfo.environment["FASTING_SERVER"] ?? "http://127.0.0.1:8080"

    @Option(help: "A bearer token: a Canopy token or a provider's JWT (env FASTING_TOKEN).")
    var token: String?

    @Option(help: "The local profile: one per person on this machine (its file is FASTING_HOME/PROFILE.json).")
    var profile: String = "default"

    func container() throws -> Container {
        guard let url = URL(string: server), url.scheme == "http" || url.scheme == "https" else {
            throw ValidationError("--server must be an http(s) URL, not \(server)")
        }
        guard let token = token ?? ProcessInfo.processInfo.environment["FASTING_TOKEN"], !token.isEmpty else {
            throw ValidationError("no token: pass --token or set FASTING_TOKEN (canopy users token NAME prints one)")
        }
        return Container(baseURL: url, token: token)
    }

    var stateFile: URL {
        let home = ProcessInfo.processInfo.environment["FASTING_HOME"].map { URL(fileURLWithPath: $0) }
            ?? FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".fasting")
        return home.appendingPathComponent("\(profile).json")
    }

    /// Opens the profile's log, runs `body` with it, and saves it (also when `body` throws).
    func withLog<T>(_ body: (FastingLog) async throws -> T) async throws -> T {
        let log = try FastingLog(container: try container(), file: stateFile)
        do {
            let result = try await body(log)
            try await log.close()
            return result
        } catch {
            try? await log.close()
            throw error
        }
    }
}

/// Prints a CanopyError as the person should read it, and exits non-zero.
func fail(_ error: any Error) -> ExitCode {
    if let error = error as? CanopyError {
        FileHandle.standardError.write(Data("fasting: \(error.code.rawValue): \(error.message)\n".utf8))
    } else {
        FileHandle.standardError.write(Data("fasting: \(error)\n".utf8))
    }
    return ExitCode.failure
}
