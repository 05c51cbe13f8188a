/// Waits until `condition` holds, polling every 50 ms; false when `timeout`
/// passed first. Tests wait for a state with a deadline like this, never
/// for a fixed time; the default deadline is a minute (docs/TESTING.md).
public func eventually(timeout: Duration = .seconds(60), _ condition: @Sendable () async throws -> Bool) async rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(50))
    }
    return try await condition()
}
