#if canImport(Glibc)
import CanopyRequestStore
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An advisory lock on a file (flock), held across processes: the embedded
/// cluster is initialised and started by one command at a time. Waiting
/// polls, so it never blocks a thread of Swift's cooperative pool.
struct FileLock {
    let path: String

    func withLock<T>(timeout: Duration = .seconds(120), _ body: () async throws -> T) async throws -> T {
        let fd = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            throw StoreError(.clusterFailed, "cannot open lock file \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        let deadline = ContinuousClock.now + timeout
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR else {
                throw StoreError(.clusterFailed, "cannot lock \(path): \(String(cString: strerror(errno)))")
            }
            guard ContinuousClock.now < deadline else {
                throw StoreError(.clusterFailed, "another canopy process has held \(path) for over \(timeout); is it stuck?")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        defer { flock(fd, LOCK_UN) }
        return try await body()
    }
}
