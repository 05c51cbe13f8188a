import CanopyPlanner
import CanopyWebServices

/// Shares as the reference shows them: records of type `cloudkit.share`,
/// saved and deleted through `records/modify`, read with `records/lookup`,
/// found by their `shortGUID` with `records/resolve` and accepted with
/// `records/accept`, over Canopy's `saveShare`, `removeParticipant`,
/// `deleteShare`, `share`, `shareMetadata` and `acceptShare`.
///
/// A share's record name: `cloudkit.zoneshare` for a zone's (CloudKit's
/// own name for it), `cloudkit.share.<root record name>` for a record
/// hierarchy's. Its `shortGUID` is the token of its URL (`/share/<token>`).
/// The names and the operations are read by `WebServicesShareRecord`.
enum WebServicesShares {
    /// How the plans write a share record: the reference's dictionary, in
    /// the zone the request names, with its URL under the public URL.
    static func rendering(_ call: WebServicesCall, zone: WebServicesCall.Zone) -> ShareRendering {
        .cloudKit(zoneID: zone.dictionary, shareURLPrefix: shareURLPrefix(call))
    }

    static func shareURLPrefix(_ call: WebServicesCall) -> String {
        (call.publicURL.hasSuffix("/") ? String(call.publicURL.dropLast()) : call.publicURL) + "/share/"
    }

    /// One share operation of records/modify (read by
    /// ``WebServicesShareRecord``): the share record (JSON text, as the
    /// plan wrote it), or the item's error.
    static func modify(_ call: WebServicesCall, operation: JSONValue, zone: WebServicesCall.Zone) async -> String {
        guard let share = WebServicesShareRecord(operation: operation) else {
            return call.itemError("recordName", .null, code: .badRequest, reason: "a share operation needs operationType and record").jsonText
        }
        let shareName = JSONValue.string(share.recordName)
        do {
            guard call.database == "private" || call.database == "shared" else {
                throw APIError(.badDatabase, "shares are made and changed by their owner in the private database, or by an administrator in the shared database")
            }
            guard call.userID != nil else {
                throw APIError(.notAuthenticated, "sign in first: a share is changed by its owner")
            }
            // The zone the request names, as saveShare's zoneName and
            // ownerName do: the caller's own, or the named owner's (whose
            // share only its owner and administrators may change: RLS).
            let target = try ShareTarget(zone: try ZoneReference(sharingZoneName: zone.zoneName, ownerName: zone.ownerName), rootRecordName: share.root)
            let rendering = rendering(call, zone: zone)
            switch try share.change() {
            case .delete:
                let plan = ShareMutationPlan(target: target, action: .delete, rendering: rendering)
                _ = try await call.runner.mutateShares([plan])
                return JSONValue.object(["recordName": shareName, "deleted": .bool(true), "zoneID": zone.dictionary]).jsonText
            case .save(let save, let removals):
                let plans = ([save] + removals).map { ShareMutationPlan(target: target, action: $0, rendering: rendering) }
                // The save and every removal in one transaction: all or none.
                guard let saved = try await call.runner.mutateShares(plans) else {
                    throw APIError(.internalError, "the share was saved but not read back; quote request id \(call.requestID) when reporting it")
                }
                return saved
            }
        } catch {
            return call.itemError("recordName", shareName, error: error).jsonText
        }
    }

    /// records/lookup of a share record by its name: the share record as
    /// the plan wrote it, or the item's error.
    static func lookup(_ call: WebServicesCall, name: String, zone: WebServicesCall.Zone) async -> String {
        do {
            let target = try ShareTarget(zone: try zone.reference, rootRecordName: WebServicesShareRecord.root(ofShareRecord: name))
            let plan = try SharePlan(target: target, rendering: rendering(call, zone: zone))
            let row = try await call.runner.read(plan.statement) { rows in try rows.first.map(SharePlan.decode) }
            guard let share = try plan.answer(row) else {
                return call.itemError("recordName", .string(name), code: .notFound, reason: "there is no share \(name) in this zone").jsonText
            }
            return share
        } catch {
            return call.itemError("recordName", .string(name), error: error).jsonText
        }
    }

    /// `records/resolve`: what a share URL's short GUID leads to.
    static func resolve(_ call: WebServicesCall) async throws -> WebServicesBody {
        try await results(call) { plan, _ in
            guard let place = try await call.runner.read(plan.locate, { rows in try rows.first.map(ShareMetadataPlan.Place.decode) }) else {
                return try plan.answer(nil)
            }
            return try plan.answer(try await call.runner.read(try plan.statement(at: place)) { rows in try rows.first.map(ShareMetadataPlan.decode) })
        }
    }

    /// `records/accept`: the caller joins each share.
    static func accept(_ call: WebServicesCall) async throws -> WebServicesBody {
        try await results(call) { plan, userID in
            try await ShareLinkOperation.accept.run(plan, database: call.runner.database, userID: userID, device: call.runner.device, logger: call.logger)
        }
    }

    /// Each `shortGUIDs` item's Share Metadata Dictionary as `run` answers
    /// it for its plan, or the item's error.
    static func results(
        _ call: WebServicesCall, _ run: (ShareMetadataPlan, Int64) async throws -> String?
    ) async throws -> WebServicesBody {
        guard let userID = call.userID else { throw APIError(.notAuthenticated, "sign in first: a share is opened by a person") }
        guard case .array(let guids)? = call.body["shortGUIDs"], !guids.isEmpty else {
            throw QueryError(.badRequest, "give shortGUIDs, a list of {\"value\": …}: the token at the end of a share's URL")
        }
        let style = CloudKitShareMetadataStyle(container: call.container, environment: call.environment, shareURLPrefix: shareURLPrefix(call))
        var results: [String] = []
        for (index, item) in guids.enumerated() {
            guard case .object(let guid) = item, case .string(let value)? = guid["value"], !value.isEmpty else {
                throw QueryError(.badRequest, "shortGUIDs[\(index)] needs a value")
            }
            let token = WebServicesShareRecord.shortGUID(ofURL: value) ?? value
            // shouldFetchRootRecord (default false) and rootRecordDesiredKeys.
            var rootRecord: CloudKitShareMetadataStyle.RootRecord?
            switch guid["shouldFetchRootRecord"] {
            case nil, .null?, .bool(false)?: break
            case .bool(true)?:
                let names: [String]?
                do {
                    names = try WebServicesRequestBody.desiredKeys(guid["rootRecordDesiredKeys"])
                } catch {
                    throw QueryError(.badRequest, "shortGUIDs[\(index)].rootRecordDesiredKeys: \(error.message)")
                }
                rootRecord = .init(desiredKeys: names, numbersAsStrings: call.numbersAsStrings)
            case let other?:
                throw QueryError(.badRequest, "shortGUIDs[\(index)].shouldFetchRootRecord must be true or false, not \(other.typeName)")
            }
            do {
                let plan = try ShareMetadataPlan(url: token, cloudKit: style, rootRecord: rootRecord)
                results.append(try await run(plan, userID) ?? "null")
            } catch {
                results.append(call.itemError("shortGUID", .string(token), error: error).jsonText)
            }
        }
        return WebServicesBody(text: "{\"results\":[" + results.joined(separator: ",") + "]}")
    }
}
