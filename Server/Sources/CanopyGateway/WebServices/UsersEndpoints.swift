import CanopyPlanner
import CanopyWebServices

/// `users/current` and `users/caller`, over Canopy's `me`. A Canopy user
/// has one display name; the reference's first and last names are its
/// first word and the rest (docs/WEB_SERVICES.md).
enum UsersEndpoints {
    /// The caller as `me` answers it, from the plan's typed statement.
    static func me(_ call: WebServicesCall) async throws -> [String: JSONValue] {
        guard let me = try await call.runner.read(MePlan.userStatement, { rows in try rows.first.map(MePlan.decodeUser) }) else {
            throw QueryError(.notAuthenticated, "the token's user no longer exists")
        }
        func text(_ value: String?) -> JSONValue { value.map(JSONValue.string) ?? .null }
        return ["userRecordName": .string(me.userRecordName), "name": text(me.name), "email": text(me.email), "phone": text(me.phone)]
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

/// `users/discover` and `users/lookup/email`, over Canopy's `discoverUser`:
/// a person found by an email address or phone number. Canopy keeps no
/// address books, so `GET users/discover` answers no one.
enum DiscoveryEndpoints {
    /// The most people one `users/lookup/id` asks for (the reference's
    /// limit on the records of one request).
    static let maximumLookups = 200

    static func identity(_ user: [String: JSONValue]) -> JSONValue {
        let (first, last) = UsersEndpoints.names(user["name"])
        return .object([
            "userRecordName": user["userRecordName"] ?? .null,
            "lookupInfo": .object(["emailAddress": user["email"] ?? .null, "phoneNumber": user["phone"] ?? .null, "userRecordName": user["userRecordName"] ?? .null]),
            "nameComponents": .object(["givenName": first, "familyName": last]),
        ])
    }

    static func find(_ call: WebServicesCall, email: String?, phone: String?) async throws -> [String: JSONValue]? {
        let statement = try DiscoverUserPlan.statement(email: email, phone: phone)
        let found = try await call.runner.read(statement) { rows in try rows.first.map(MePlan.decodeUser) }
        guard let found else { return nil }
        func text(_ value: String?) -> JSONValue { value.map(JSONValue.string) ?? .null }
        return ["userRecordName": .string(found.userRecordName), "name": text(found.name), "email": text(found.email), "phone": text(found.phone)]
    }

    /// `users/discover`: POST with lookupInfos, or GET (no address book: none).
    static func discover(_ call: WebServicesCall) async throws -> [String: JSONValue] {
        guard case .array(let infos)? = call.body["lookupInfos"] else { return ["users": .array([])] }
        var users: [JSONValue] = []
        for info in infos {
            guard case .object(let lookup) = info else { continue }
            let email = lookup["emailAddress"]?.stringValue, phone = lookup["phoneNumber"]?.stringValue
            guard email != nil || phone != nil else { continue }
            if let user = try await find(call, email: email, phone: phone) { users.append(identity(user)) }
        }
        return ["users": .array(users)]
    }

    /// `users/lookup/id`: `{users: [{userRecordName}]}`, each the person's
    /// User Identity (their names; no contact of theirs) or NOT_FOUND.
    static func lookupID(_ call: WebServicesCall) async throws -> [String: JSONValue] {
        guard case .array(let asked)? = call.body["users"], !asked.isEmpty else {
            throw QueryError(.badRequest, "users/lookup/id needs users, a list of {\"userRecordName\": …}")
        }
        guard asked.count <= maximumLookups else {
            throw QueryError(.limitExceeded, "users/lookup/id takes at most \(maximumLookups) users, not \(asked.count)")
        }
        var users: [JSONValue] = []
        for (index, item) in asked.enumerated() {
            guard let name = item.objectValue?["userRecordName"]?.stringValue, !name.isEmpty else {
                throw QueryError(.badRequest, "users[\(index)] needs a userRecordName")
            }
            let found = try await call.runner.read(DiscoverUserPlan.statement(userRecordName: name)) { rows in
                try rows.first.map { try $0.decode((String, String?).self) }
            }
            if let (recordName, displayName) = found {
                let (first, last) = UsersEndpoints.names(displayName.map(JSONValue.string))
                users.append(.object([
                    "userRecordName": .string(recordName),
                    "lookupInfo": .object(["userRecordName": .string(recordName)]),
                    "nameComponents": .object(["givenName": first, "familyName": last]),
                ]))
            } else {
                users.append(.object(["userRecordName": .string(name), "serverErrorCode": .string(WebServicesCode.notFound.rawValue),
                                      "reason": .string("no user has that record name"), "uuid": .string(call.requestID)]))
            }
        }
        return ["users": .array(users)]
    }

    /// `users/lookup/contacts` (CloudKit JS's `discoverAllContactUserInfos`):
    /// the people of the caller's address book who use the app. Canopy
    /// keeps no address books, so nobody: an empty list, so the call
    /// resolves as it does for a person with no contacts on the app.
    static func lookupContacts(_ call: WebServicesCall) async throws -> [String: JSONValue] {
        ["users": .array([])]
    }

    /// `users/lookup/email`: `{users: [{emailAddress}]}`, each found or NOT_FOUND.
    static func lookupEmail(_ call: WebServicesCall) async throws -> [String: JSONValue] {
        guard case .array(let asked)? = call.body["users"], !asked.isEmpty else {
            throw QueryError(.badRequest, "users/lookup/email needs users, a list of {\"emailAddress\": …}")
        }
        var users: [JSONValue] = []
        for item in asked {
            guard let email = item.objectValue?["emailAddress"]?.stringValue else { throw QueryError(.badRequest, "each of users needs an emailAddress") }
            if let user = try await find(call, email: email, phone: nil) {
                let (first, last) = UsersEndpoints.names(user["name"])
                users.append(.object(["userRecordName": user["userRecordName"] ?? .null, "firstName": first, "lastName": last, "emailAddress": .string(email)]))
            } else {
                users.append(.object(["emailAddress": .string(email), "serverErrorCode": .string(WebServicesCode.notFound.rawValue),
                                      "reason": .string("no discoverable user has that address"), "uuid": .string(call.requestID)]))
            }
        }
        return ["users": .array(users)]
    }
}
