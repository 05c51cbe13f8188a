import CanopyEncoding
import Foundation
import Testing

/// The one hex and base64url of every module, against RFC 4648's vectors.
@Suite("Hex and base64url")
struct EncodingTests {
    @Test("hex is lower case, two digits a byte")
    func hex() {
        #expect(Hex.encode([0x00, 0x0f, 0xa5, 0xff]) == "000fa5ff")
        #expect(Hex.encode([UInt8]()) == "")
    }

    @Test("base64url has no padding, uses - and _, and refuses padding or the other alphabet")
    func base64URL() {
        let vectors = ["": "", "f": "Zg", "fo": "Zm8", "foo": "Zm9v", "foob": "Zm9vYg", "fooba": "Zm9vYmE", "foobar": "Zm9vYmFy"]
        for (plain, encoded) in vectors {
            #expect(Base64URL.encode(Data(plain.utf8)) == encoded)
            #expect(Base64URL.decode(encoded) == Data(plain.utf8))
        }
        #expect(Base64URL.encode(Data([0xfb, 0xff, 0xbf])) == "-_-_")
        #expect(Base64URL.decode("-_-_") == Data([0xfb, 0xff, 0xbf]))
        #expect(Base64URL.decode("Zg==") == nil)
        #expect(Base64URL.decode("+/+/") == nil)
        #expect(Base64URL.decode("Z") == nil)
    }
}
