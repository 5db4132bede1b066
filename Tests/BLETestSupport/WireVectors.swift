import BLEWire
import Testing

/// Checks a byte-exact vector both ways: `value` encodes to `hex`, and `hex` decodes to `value`.
public func expectVector<T: WireCodable & Equatable>(
    _ value: T, _ hex: String, sourceLocation: SourceLocation = #_sourceLocation
) {
    guard let bytes = [UInt8](hex: hex) else {
        Issue.record("bad hex in test vector: \(hex)", sourceLocation: sourceLocation)
        return
    }
    #expect(value.encoded.hexString() == bytes.hexString(), "encode", sourceLocation: sourceLocation)
    do {
        let decoded = try T(bytes: bytes)
        #expect(decoded == value, "decode", sourceLocation: sourceLocation)
    } catch {
        Issue.record("decoding \(T.self) from \(hex) threw \(error)", sourceLocation: sourceLocation)
    }
}

/// Drip-feed: every strict prefix of a valid encoding must throw a `WireError` (never crash, never succeed).
public func expectDripFeed<T: WireCodable>(
    _ type: T.Type, _ hex: String, sourceLocation: SourceLocation = #_sourceLocation
) {
    guard let bytes = [UInt8](hex: hex) else {
        Issue.record("bad hex in test vector: \(hex)", sourceLocation: sourceLocation)
        return
    }
    for length in 0..<bytes.count {
        let prefix = Array(bytes.prefix(length))
        #expect(throws: WireError.self, "prefix of \(length) byte(s) of \(T.self) must throw", sourceLocation: sourceLocation) {
            _ = try T(bytes: prefix)
        }
    }
}

/// Decodes `hex` as `T` and returns the thrown error's code, or `nil` if it decoded (or `hex` is not hex).
public func decodeErrorCode<T: WireCodable>(_ type: T.Type, _ hex: String) -> WireError.Code? {
    guard let bytes = [UInt8](hex: hex) else { return nil }
    return decodeErrorCode(type, bytes)
}

/// Decodes `bytes` as `T` and returns the thrown error's code, or `nil` if it decoded.
public func decodeErrorCode<T: WireCodable>(_ type: T.Type, _ bytes: [UInt8]) -> WireError.Code? {
    do {
        _ = try T(bytes: bytes)
        return nil
    } catch {
        return error.code
    }
}
