import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Testing

// The GraphQL calls and records the gateway suites share.

/// What a GraphQL call answered: the field's data and its first error.
struct Answer {
    let status: HTTPResponse.Status
    let body: [String: Any]
    let field: String

    var data: Any? { (body["data"] as? [String: Any])?[field] }
    var object: [String: Any] { data as? [String: Any] ?? [:] }
    var list: [[String: Any]] { data as? [[String: Any]] ?? [] }
    var code: String? { errorCode(body) }
    var message: String { firstError(body)["message"] as? String ?? "" }
}

extension TestClientProtocol {
    /// POSTs a GraphQL document as `token`; the answer for root field `field`.
    func call(_ field: String, _ query: String, _ variables: [String: Any]? = nil, token: String) async throws -> Answer {
        try await callWithHeaders(field, query, variables, token: token).0
    }

    /// A call that also returns the response's headers, sending
    /// `Canopy-Position` when given.
    func callWithHeaders(_ field: String, _ query: String, _ variables: [String: Any]? = nil, token: String, position: String? = nil) async throws -> (Answer, HTTPFields) {
        var headers: HTTPFields = [.contentType: "application/json", .authorization: "Bearer \(token)"]
        if let position { headers[HTTPField.Name("Canopy-Position")!] = position }
        var payload: [String: Any] = ["query": query]
        if let variables { payload["variables"] = variables }
        let response = try await execute(uri: "/graphql", method: .post, headers: headers, body: ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: payload)))
        return (Answer(status: response.status, body: try responseJSON(response.body), field: field), response.headers)
    }
}

/// Saves through `modifyRecords`, failing the test on any record error.
func save(_ client: any TestClientProtocol, token: String, zone: String = "Fasting", _ records: [[String: Any]], policy: String = "IF_SERVER_RECORD_UNCHANGED") async throws -> [[String: Any]] {
    let answer = try await client.call("modifyRecords", """
        mutation($s: [RecordInput!], $p: SavePolicy) { modifyRecords(scope: PRIVATE, zone: {zoneName: "\(zone)"}, save: $s, savePolicy: $p) {
          saved { recordName recordChangeTag fields } errors { recordName code message } } }
        """, ["s": records, "p": policy], token: token)
    let errors = answer.object["errors"] as? [[String: Any]] ?? []
    #expect(errors.isEmpty, "\(errors) \(answer.body)")
    return answer.object["saved"] as? [[String: Any]] ?? []
}

func fast(_ name: String, hours: Int, end: Int64, tag: String? = nil, parent: String? = nil) -> [String: Any] {
    var record: [String: Any] = [
        "recordName": name, "recordType": "Fast",
        "fields": ["hours": hours, "endDate": ["type": "TIMESTAMP", "value": end], "note": "fast \(name)"],
    ]
    if let tag { record["recordChangeTag"] = tag }
    if let parent { record["parent"] = parent }
    return record
}

/// One page of `zoneChanges` as a test reads it.
struct ZonePage {
    var changed: [String]
    var deleted: [String]
    var token: String
    var moreComing: Bool
}

extension TestClientProtocol {
    /// One page of a zone's changes; `position` is sent as `Canopy-Position`.
    func zoneChanges(
        _ zone: String, scope: String = "PRIVATE", owner: String? = nil, since: String?, limit: Int = 200, token: String, position: String? = nil
    ) async throws -> (ZonePage?, Answer) {
        let ownerPart = owner.map { ", ownerName: \"\($0)\"" } ?? ""
        let (answer, _) = try await callWithHeaders("zoneChanges", """
            query($since: String, $limit: Int) { zoneChanges(scope: \(scope), zone: {zoneName: "\(zone)"\(ownerPart)}, since: $since, limit: $limit) {
              changed { recordName } deleted { recordName recordType } token moreComing } }
            """, ["since": since as Any? ?? NSNull(), "limit": limit], token: token, position: position)
        guard let token = answer.object["token"] as? String else { return (nil, answer) }
        let page = ZonePage(
            changed: (answer.object["changed"] as? [[String: Any]] ?? []).compactMap { $0["recordName"] as? String },
            deleted: (answer.object["deleted"] as? [[String: Any]] ?? []).compactMap { $0["recordName"] as? String },
            token: token, moreComing: answer.object["moreComing"] as? Bool ?? false
        )
        return (page, answer)
    }

    func databaseChanges(scope: String, since: String?, limit: Int = 200, token: String) async throws -> (changed: [String], deleted: [String], token: String, more: Bool, answer: Answer) {
        let answer = try await call("databaseChanges", """
            query($since: String, $limit: Int) { databaseChanges(scope: \(scope), since: $since, limit: $limit) {
              changedZones { zoneName ownerName } deletedZones { zoneName ownerName } token moreComing } }
            """, ["since": since as Any? ?? NSNull(), "limit": limit], token: token)
        return (
            (answer.object["changedZones"] as? [[String: Any]] ?? []).compactMap { $0["zoneName"] as? String },
            (answer.object["deletedZones"] as? [[String: Any]] ?? []).compactMap { $0["zoneName"] as? String },
            answer.object["token"] as? String ?? "", answer.object["moreComing"] as? Bool ?? false, answer
        )
    }
}

/// A `Contact` record for the sharing suites.
func contact(_ name: String, name person: String, parent: String? = nil, tag: String? = nil) -> [String: Any] {
    var record: [String: Any] = ["recordName": name, "recordType": "Contact", "fields": ["name": person]]
    if let parent { record["parent"] = parent }
    if let tag { record["recordChangeTag"] = tag }
    return record
}

extension TestClientProtocol {
    /// POSTs a GraphQL document as `token`, or with no Authorization at all.
    func call(_ field: String, _ query: String, _ variables: [String: Any]? = nil, as token: String?, headers extra: HTTPFields = [:]) async throws -> Answer {
        var headers: HTTPFields = [.contentType: "application/json"]
        if let token { headers[.authorization] = "Bearer \(token)" }
        headers.append(contentsOf: extra)
        var payload: [String: Any] = ["query": query]
        if let variables { payload["variables"] = variables }
        let response = try await execute(uri: "/graphql", method: .post, headers: headers, body: ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: payload)))
        return Answer(status: response.status, body: try responseJSON(response.body), field: field)
    }
}

extension TestClientProtocol {
    /// A revoked token is refused within 5 s (docs/API.md §10): asks `me` with
    /// `token` 5 s after `revoked` (when the revocation returned). The
    /// promise is about when a request is sent, so however long a loaded
    /// machine takes to answer, the answer must be NOT_AUTHENTICATED.
    func answerFiveSeconds(after revoked: ContinuousClock.Instant, token: String) async throws -> Answer {
        try await Task.sleep(until: revoked + .seconds(5))
        return try await call("me", "{ me { name } }", token: token)
    }
}
