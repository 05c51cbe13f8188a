import CanopyPlanner

/// `users/current` and `users/caller`, over Canopy's `me`. A Canopy user
/// has one display name; the reference's first and last names are its
/// first word and the rest (docs/WEB_SERVICES.md).
enum UsersEndpoints {
    static let meDocument = "query WebServicesMe { me { userRecordName name email phone } }"

    static func me(_ call: WebServicesCall) async throws -> [String: JSONValue] {
        guard case .object(let me) = try await call.bridge.run(meDocument, [:]) else { return [:] }
        return me
    }

    static func names(_ name: JSONValue?) -> (first: JSONValue, last: JSONValue) {
        guard case .string(let text)? = name, !text.isEmpty else { return (.null, .null) }
        let parts = text.split(separator: " ", maxSplits: 1)
        return (.string(String(parts[0])), parts.count > 1 ? .string(String(parts[1])) : .null)
    }

    static func current(_ call: WebServicesCall) async throws -> [String: JSONValue] {
        let me = try await me(call)
        let (first, last) = names(me["name"])
        return ["userRecordName": me["userRecordName"] ?? .null, "firstName": first, "lastName": last]
    }

    static func caller(_ call: WebServicesCall) async throws -> [String: JSONValue] {
        let me = try await me(call)
        let (first, last) = names(me["name"])
        let identity: JSONValue = .object([
            "userRecordName": me["userRecordName"] ?? .null,
            "lookupInfo": .object([
                "emailAddress": me["email"] ?? .null, "phoneNumber": me["phone"] ?? .null, "userRecordName": me["userRecordName"] ?? .null,
            ]),
            "nameComponents": .object(["givenName": first, "familyName": last]),
        ])
        return ["users": .array([identity])]
    }
}
