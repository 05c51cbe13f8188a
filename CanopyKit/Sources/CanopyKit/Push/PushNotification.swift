import Foundation

/// What a push from Canopy says (CKNotification, read with
/// `PushNotification(remoteNotification:)` from the APNs `userInfo`, a Web
/// Push message or a webhook's body): which subscriptions fired, never what
/// changed. The app fetches the feeds from its change tokens, e.g.
/// `SyncEngine.fetchChanges()`.
public struct PushNotification: Sendable, Hashable {
    /// The subscriptions that fired since the device's previous push.
    public let subscriptionIDs: [Subscription.ID]
    /// The same for every retry of one push: a receiver drops a duplicate by it.
    public let notificationID: String

    /// From an APNs `userInfo` or a Web Push message (`{"canopy": {"sid": […], "nid": "…"}}`),
    /// or a webhook's body (`{"subscriptionIDs": […], "notificationID": "…"}`); nil when it is not Canopy's.
    public init?(remoteNotification userInfo: [AnyHashable: Any]) {
        if let canopy = userInfo["canopy"] as? [String: Any] {
            guard let ids = canopy["sid"] as? [String], let nid = canopy["nid"] as? String else { return nil }
            self.init(subscriptionIDs: ids, notificationID: nid)
        } else if let ids = userInfo["subscriptionIDs"] as? [String], let nid = userInfo["notificationID"] as? String {
            self.init(subscriptionIDs: ids, notificationID: nid)
        } else {
            return nil
        }
    }

    /// From the JSON text of a Web Push message or a webhook's body.
    public init?(json data: Data) {
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return nil }
        self.init(remoteNotification: object)
    }

    init(subscriptionIDs: [Subscription.ID], notificationID: String) {
        self.subscriptionIDs = subscriptionIDs
        self.notificationID = notificationID
    }
}
