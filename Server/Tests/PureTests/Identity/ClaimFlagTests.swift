@testable import CanopyIdentity
import CanopyEncoding
import Foundation
import Testing

/// Issue 64: `email_verified` counts only as JSON `true` or Apple's `"true"`.
@Suite("Boolean claims")
struct ClaimFlagTests {
    func token(_ claims: String) throws -> UnverifiedToken {
        try UnverifiedToken(Base64URL.encode(Data(#"{"alg":"RS256"}"#.utf8)) + "." + Base64URL.encode(Data(claims.utf8)) + ".sig")
    }

    @Test("true and \"true\" are verified; 1, \"1\", 0, false and an absent claim are not")
    func emailVerified() throws {
        for (claim, verified) in [("true", true), ("\"true\"", true), ("\"TRUE\"", true), ("1", false), ("\"1\"", false),
                                  ("0", false), ("false", false), ("1.0", false), ("null", false)] {
            #expect(try token(#"{"email_verified":\#(claim)}"#).flag("email_verified") == verified, "\(claim)")
        }
        #expect(try token("{}").flag("email_verified") == false)
    }
}
