import BLEWire
import Testing

/// A code written as every module writes its own: an open struct over a private enum, with a payload.
private struct SampleCode: BLEErrorCode {
    private enum Backing: Hashable, Sendable { case missing, late(seconds: Int), refused(status: UInt8) }
    private let backing: Backing
    private init(_ backing: Backing) { self.backing = backing }

    static let missing = SampleCode(.missing)
    static func late(seconds: Int) -> SampleCode { SampleCode(.late(seconds: seconds)) }
    static func refused(_ status: UInt8) -> SampleCode { SampleCode(.refused(status: status)) }

    /// A kind added by a later release: a client's `switch` with `default:` still compiles and runs.
    static let addedLater = SampleCode(.late(seconds: -1))

    var seconds: Int? { if case .late(let s) = backing { s } else { nil } }
    var status: UInt8? { if case .refused(let s) = backing { s } else { nil } }

    var category: BLEErrorCategory {
        switch backing {
        case .missing: .notFound
        case .late: .timedOut
        case .refused: .protocolError
        }
    }

    var description: String {
        switch backing {
        case .missing: "missing"
        case .late(let s): "late(\(s))"
        case .refused(let s): "refused(\(s))"
        }
    }
}

private typealias SampleError = BLEFailure<SampleCode>

@Suite struct BLEFailureTests {
    @Test func equalAndHashedByCodeOnly() {
        let a = SampleError(.missing, "no such device")
        let b = SampleError(.missing, "another reason", underlying: WireError(.truncated, "short"))
        #expect(a == b)
        #expect(a.hashValue == b.hashValue)
        #expect(Set([a, b]).count == 1)
        #expect(SampleError(.late(seconds: 3)) != SampleError(.late(seconds: 4)))
        #expect(SampleError(.late(seconds: 3)) == SampleError(.late(seconds: 3), "again"))
        #expect(SampleError(.missing) != SampleError(.refused(0x05)))
    }

    @Test func recordsTheRaisersFileAndLine() {
        let line = #line + 1
        let error = SampleError(.missing, "where")
        #expect(error.file == #fileID)
        #expect(error.line == line)
        let relayed = SampleError(.missing, "relayed", file: "Elsewhere/File.swift", line: 7)
        #expect(relayed.file == "Elsewhere/File.swift" && relayed.line == 7)
        #expect(relayed.debugDescription == "missing: relayed (Elsewhere/File.swift:7)")
    }

    @Test func reasonDefaultsToTheCodeAndDescriptionAddsTheUnderlyingError() {
        #expect(SampleError(.late(seconds: 2)).reason == "late(2)")
        #expect(SampleError(.missing, "gone").description == "gone")
        let wrapped = SampleError(.refused(0x05), "refused", underlying: WireError(.truncated, "short read"))
        #expect(wrapped.description == "refused (short read)")
        #expect((wrapped.underlying as? WireError)?.code == .truncated)
    }

    @Test func categoryComesFromTheCode() {
        #expect(SampleError(.missing).category == .notFound)
        #expect(SampleError(.late(seconds: 1)).category == .timedOut)
        #expect(SampleError(.refused(1)).category == .protocolError)
        #expect(WireError(.truncated, "").category == .protocolError)
        #expect(WireError(.oversized, "").category == .protocolError)
        #expect(BLEErrorCategory.notFound.description == "notFound")
    }

    @Test func payloadAccessorsReadWhatTheFactoriesBuilt() {
        let error = SampleError(.refused(0x13), "the peer said no")
        #expect(error.code.status == 0x13)
        #expect(error.code.seconds == nil)
        #expect(SampleError(.late(seconds: 30)).code.seconds == 30)
        #expect(SampleError(.missing).code.status == nil)
    }

    @Test func anyBLEErrorReadsEveryFailureAlike() {
        let errors: [any Error] = [SampleError(.missing, "one"), WireError(.truncated, "two"), CancellationError()]
        let reasons = errors.compactMap { ($0 as? any BLEError)?.reason }
        #expect(reasons == ["one", "two"])
        let categories = errors.compactMap { ($0 as? any BLEError)?.category }
        #expect(categories == [.notFound, .protocolError])
    }

    @Test func aNewCodeDoesNotBreakASwitchWithDefault() {
        func classify(_ code: SampleCode) -> String {
            switch code {
            case .missing: "missing"
            case .late(seconds: 5): "five seconds late"
            default: "other: \(code.category)"
            }
        }
        #expect(classify(.missing) == "missing")
        #expect(classify(.late(seconds: 5)) == "five seconds late")
        #expect(classify(.addedLater) == "other: timedOut")
        let category: BLEErrorCategory = .cancelled
        switch category {
        case .notFound, .timedOut: Issue.record("not \(category)")
        default: break
        }
    }

    @Test func catchesByTypealiasAndCode() {
        do {
            throw WireError(.trailingBytes, "two bytes too many")
        } catch let error as WireError where error.code == .trailingBytes {
            #expect(error.reason == "two bytes too many")
        } catch {
            Issue.record("\(error)")
        }
        #expect(throws: WireError(.truncated)) { throw WireError(.truncated, "any reason") }
    }
}
