import Foundation

/// Devices and the notifications they receive (docs/API.md §14, docs/PUSH.md).
extension Container {
    /// Registers where this account's pushes go; registering the same token,
    /// endpoint or URL again answers the same device. Registering an APNs
    /// token or a Web Push subscription also makes it this container's
    /// device: every later request says so (`Canopy-Device`), and the
    /// server does not wake the device for changes it made itself, as
    /// CloudKit does not. A webhook is not this device.
    @discardableResult
    public func register(_ device: PushDevice) async throws -> RegisteredDevice {
        let data = try await transport.execute(Documents.registerDevice, device.variables)
        let registered = try RegisteredDevice(json: data["registerDevice"])
        if device.isThisDevice { transport.device.id = registered.deviceID }
        return registered
    }

    /// Stops pushes to a device (on sign-out); false when the account has no such device.
    @discardableResult
    public func unregisterDevice(withID deviceID: String) async throws -> Bool {
        let data = try await transport.execute(Documents.unregisterDevice, ["id": .string(deviceID)])
        if transport.device.id == deviceID { transport.device.id = nil }
        return data["unregisterDevice"]?.bool ?? false
    }

    /// The account's devices.
    public func devices() async throws -> [RegisteredDevice] {
        let data = try await transport.execute(Documents.devices)
        return try (data["devices"]?.array ?? []).map { try RegisteredDevice(json: $0) }
    }

    /// The device this container's requests come from (`Canopy-Device`),
    /// set by `register(_:)` for APNs and Web Push; set it for another
    /// kind, or nil to be told of this container's own changes too.
    public var deviceID: String? {
        get { transport.device.id }
        set { transport.device.id = newValue }
    }

    /// The server's VAPID public key (base64url): the `applicationServerKey`
    /// a browser passes to `pushManager.subscribe` before `register(.webPush…)`.
    public func vapidPublicKey() async throws -> String {
        let data = try await transport.execute(Documents.pushConfiguration)
        guard let key = data["pushConfiguration"]?["vapidPublicKey"]?.string else {
            throw CanopyError(.serverResponseLost, "no VAPID key in the answer")
        }
        return key
    }
}

/// The device a container's requests come from; set once registered.
final class OriginDevice: @unchecked Sendable {
    private let lock = NSLock()
    private var value: String?

    var id: String? {
        get { lock.withLock { value } }
        set { lock.withLock { value = newValue } }
    }
}
