import BLEProtocols
import BLEProtocolsTestSupport
import BLEWire
import Testing

/// How many requests discovery takes: the early stops (no room left for another declaration), the whole-database walk
/// and the descriptor gaps, synchronously against the ``ATTServer`` machine and against scripted servers.
@Suite struct DiscoveryRoundTripTests {
    /// Many services: 16- and 128-bit UUIDs mixed, characteristics with and without descriptors, a service without
    /// characteristics, a secondary service between primary ones.
    static func manyServices() -> GATTDatabase {
        var services: [GATTServiceDefinition] = []
        for i in 0..<24 {
            let hex = String(i, radix: 16, uppercase: true)
            let long = BluetoothUUID("12345678-1234-5678-1234-0000000000" + (hex.count == 1 ? "0" + hex : hex)) ?? 0
            var characteristics: [GATTCharacteristicDefinition] = []
            for k in 0..<(i % 4) {
                let uuid: BluetoothUUID = k % 2 == 0 ? BluetoothUUID(UInt16(0x2A00 + i * 4 + k)) : long
                characteristics.append(GATTCharacteristicDefinition(
                    uuid: uuid, properties: k == 1 ? [.read, .notify] : .read, value: [UInt8(k)],
                    userDescription: (i + k) % 5 == 0 ? "c\(k)" : nil))
            }
            services.append(GATTServiceDefinition(uuid: i % 3 == 0 ? long : BluetoothUUID(UInt16(0x1900 + i)), isPrimary: i != 7,
                                                  characteristics: characteristics))
        }
        return GATTDatabase(deviceName: "Many", services: services)
    }

    // MARK: Early stops

    /// A last characteristic whose value is followed by one descriptor at the service's end: no declaration fits in
    /// one handle, so characteristic discovery stops after one request (it used to ask again for Attribute Not Found).
    @Test func noRoomForAnotherDeclarationEndsCharacteristicDiscovery() throws {
        let script = ScriptedATTServer([.readByTypeResponse(.init(entries: [.declaration(0x0011, value: 0x0012)]))])
        var discovery = CharacteristicDiscovery(in: 0x0010...0x0013)
        let found = try discovery.run(script.answer)
        #expect(script.requests.count == 1)
        #expect(found.map(\.endHandle) == [0x0013] && found[0].descriptorRange == 0x0013...0x0013)
        // Two handles left: a declaration and its value may still be there, so the walk asks.
        let room = ScriptedATTServer([
            .readByTypeResponse(.init(entries: [.declaration(0x0011, value: 0x0012)])),
            .errorResponse(.init(requestOpcode: .readByTypeRequest, handle: 0x0013, error: .attributeNotFound)),
        ])
        var roomy = CharacteristicDiscovery(in: 0x0010...0x0014)
        #expect(try roomy.run(room.answer).count == 1)
        #expect(room.requests == [.readByTypeRequest(.init(range: .init(start: 0x0010, end: 0x0014), type: 0x2803)),
                                  .readByTypeRequest(.init(range: .init(start: 0x0013, end: 0x0014), type: 0x2803))])
    }

    /// The same early stop at the top of the handle space: a value at 0xFFFE leaves only 0xFFFF.
    @Test func noRoomBelow0xFFFFEndsCharacteristicDiscovery() throws {
        let script = ScriptedATTServer([.readByTypeResponse(.init(entries: [.declaration(0xFFF0, value: 0xFFF1), .declaration(0xFFFD, value: 0xFFFE)]))])
        var discovery = CharacteristicDiscovery(in: 0xFFE0...0xFFFF)
        let found = try discovery.run(script.answer)
        #expect(script.requests.count == 1)
        #expect(found.map(\.endHandle) == [0xFFFC, 0xFFFF])
    }

    /// Descriptor discovery ends when a descriptor takes the range's last handle; service discovery when a group ends
    /// at 0xFFFF (by UUID too).
    @Test func descriptorAndServiceWalksEndAtTheirLastHandle() throws {
        let descriptors = ScriptedATTServer([.findInformationResponse(.init(entries: [.init(handle: 0x0013, type: 0x2902), .init(handle: 0x0014, type: 0x2901)]))])
        var d = DescriptorDiscovery(in: 0x0013...0x0014)
        #expect(try d.run(descriptors.answer).map(\.uuid) == [0x2902, 0x2901])
        #expect(descriptors.requests.count == 1)
        let byUUID = ScriptedATTServer([.findByTypeValueResponse(.init(handles: [.init(start: 0x0010, end: 0x0020), .init(start: 0xFFF0, end: 0xFFFF)]))])
        var s = PrimaryServiceDiscovery(uuid: 0x180F)
        #expect(try s.run(byUUID.answer).map(\.endHandle) == [0x0020, 0xFFFF])
        #expect(byUUID.requests.count == 1)
    }

    /// Hostile answers around the early stops: a declaration at the range's last handle (its value cannot be inside),
    /// a value handle of 0xFFFF before a further declaration, an empty page.
    @Test func hostileAnswersAroundTheEarlyStops() {
        let atEnd = ScriptedATTServer([.readByTypeResponse(.init(entries: [.declaration(0x0013, value: 0x0014)]))])
        var a = CharacteristicDiscovery(in: 0x0010...0x0013)
        #expect(throws: GATTError(.malformedResponse, "")) { try a.run(atEnd.answer) }
        let after0xFFFF = ScriptedATTServer([.readByTypeResponse(.init(entries: [.declaration(0xFFFE, value: 0xFFFF), .declaration(0xFFFF, value: 0xFFFF)]))])
        var b = CharacteristicDiscovery(in: 0xFFF0...0xFFFF)
        #expect(throws: GATTError(.malformedResponse, "")) { try b.run(after0xFFFF.answer) }
        let empty = ScriptedATTServer([.readByTypeResponse(.init(entries: []))])
        var c = CharacteristicDiscovery(in: 0x0010...0x0013)
        #expect(throws: GATTError(.malformedResponse, "")) { try c.run(empty.answer) }
        // A second page starting at the last handle, where no declaration fits, is never asked for: the one-page
        // answer ends the walk with the last characteristic reaching the range's end.
        let onePage = ScriptedATTServer([.readByTypeResponse(.init(entries: [.declaration(0x0010, value: 0x0011), .declaration(0x0012, value: 0x0013)]))])
        var d = CharacteristicDiscovery(in: 0x0010...0x0014)
        #expect((try? d.run(onePage.answer))?.map(\.endHandle) == [0x0011, 0x0014])
        #expect(onePage.requests.count == 1)
    }

    // MARK: Descriptors of several characteristics

    /// No gap anywhere: nothing is asked.
    @Test func noGapsNoDescriptorRequests() throws {
        let script = ScriptedATTServer([])
        let characteristics = [GATTCharacteristic(uuid: 0x2A00, properties: .read, declarationHandle: 2, valueHandle: 3, endHandle: 3),
                               GATTCharacteristic(uuid: 0x2A01, properties: .read, declarationHandle: 4, valueHandle: 5, endHandle: 5)]
        var discovery = DescriptorsDiscovery(of: characteristics)
        #expect(try discovery.run(script.answer) == [[], []])
        #expect(script.requests.isEmpty)
    }

    /// Gaps: one request covers several characteristics' gaps, attributes between them are skipped, and the next
    /// request jumps to the next gap still unknown.
    @Test func oneRequestCoversSeveralGaps() throws {
        let characteristics = [GATTCharacteristic(uuid: 0x2A19, properties: .notify, declarationHandle: 0x10, valueHandle: 0x11, endHandle: 0x12),
                               GATTCharacteristic(uuid: 0x2A37, properties: .read, declarationHandle: 0x13, valueHandle: 0x14, endHandle: 0x14),
                               GATTCharacteristic(uuid: 0x2A38, properties: .notify, declarationHandle: 0x15, valueHandle: 0x16, endHandle: 0x18),
                               GATTCharacteristic(uuid: 0x2A39, properties: .notify, declarationHandle: 0x30, valueHandle: 0x31, endHandle: 0x32)]
        let script = ScriptedATTServer([
            // 0x12–0x17: a CCCD, the next two declarations and values, a CCCD; the page stops before a 128-bit type.
            .findInformationResponse(.init(entries: [.init(handle: 0x12, type: 0x2902), .init(handle: 0x13, type: 0x2803), .init(handle: 0x14, type: 0x2A37),
                                                     .init(handle: 0x15, type: 0x2803), .init(handle: 0x16, type: 0x2A38), .init(handle: 0x17, type: 0x2902)])),
            .findInformationResponse(.init(entries: [.init(handle: 0x18, type: BluetoothUUID("12345678-1234-5678-1234-56789ABCDEF0") ?? 0)])),
            .findInformationResponse(.init(entries: [.init(handle: 0x32, type: 0x2902)])),
        ])
        var discovery = DescriptorsDiscovery(of: characteristics)
        let found = try discovery.run(script.answer)
        #expect(found.map { $0.map(\.handle) } == [[0x12], [], [0x17, 0x18], [0x32]])
        #expect(script.requests == [.findInformationRequest(.init(range: .init(start: 0x12, end: 0x32))),
                                    .findInformationRequest(.init(range: .init(start: 0x18, end: 0x32))),
                                    .findInformationRequest(.init(range: .init(start: 0x32, end: 0x32)))])
        // Attribute Not Found for the rest: the remaining gaps are empty.
        let none = ScriptedATTServer([.findInformationResponse(.init(entries: [.init(handle: 0x12, type: 0x2902)])),
                           .errorResponse(.init(requestOpcode: .findInformationRequest, handle: 0x17, error: .attributeNotFound))])
        var partial = DescriptorsDiscovery(of: characteristics)
        #expect(try partial.run(none.answer).map(\.count) == [1, 0, 0, 0])
        #expect(none.requests.count == 2)
    }

    /// Handles going backwards, repeating, outside the request, or an empty page fail the procedure.
    @Test func hostileDescriptorAnswersAreRejected() {
        let characteristics = [GATTCharacteristic(uuid: 0x2A19, properties: .notify, declarationHandle: 0x10, valueHandle: 0x11, endHandle: 0x12),
                               GATTCharacteristic(uuid: 0x2A38, properties: .notify, declarationHandle: 0x15, valueHandle: 0x16, endHandle: 0x18)]
        let pages: [[ATTFindInformationResponse.Entry]] = [
            [.init(handle: 0x14, type: 0x2803), .init(handle: 0x12, type: 0x2902)],  // backwards
            [.init(handle: 0x12, type: 0x2902), .init(handle: 0x12, type: 0x2902)],  // repeated
            [.init(handle: 0x11, type: 0x2902)],                                       // before the request
            [.init(handle: 0x19, type: 0x2902)],                                       // after it
            [],                                                                        // empty
        ]
        for page in pages {
            let script = ScriptedATTServer([.findInformationResponse(.init(entries: page))])
            var discovery = DescriptorsDiscovery(of: characteristics)
            #expect(throws: GATTError(.malformedResponse, "")) { try discovery.run(script.answer) }
        }
        // A second page that goes back to a handle the first one covered.
        let second = ScriptedATTServer([.findInformationResponse(.init(entries: [.init(handle: 0x12, type: 0x2902), .init(handle: 0x13, type: 0x2803)])),
                             .findInformationResponse(.init(entries: [.init(handle: 0x13, type: 0x2902)]))])
        var again = DescriptorsDiscovery(of: characteristics)
        #expect(throws: GATTError(.malformedResponse, "")) { try again.run(second.answer) }
        #expect(second.requests.last == .findInformationRequest(.init(range: .init(start: 0x17, end: 0x18))))
    }

    // MARK: The whole database

    /// The whole-database discovery finds what per-service discovery finds, in fewer requests, at MTU 23 and 247.
    @Test(arguments: [23, 247]) func wholeDatabaseMatchesPerService(mtu: Int) throws {
        for database in [GATTProcedureTests.database(), Self.manyServices()] {
            let slow = try SynchronousATTServer(database, mtu: mtu)
            let expected = try discoverPerService(slow.answer)
            let fast = try SynchronousATTServer(database, mtu: mtu)
            var discovery = DatabaseDiscovery()
            let found = try discovery.run(fast.answer)
            #expect(found == expected)
            #expect(fast.requests.count < slow.requests.count, "\(fast.requests.count) vs \(slow.requests.count) at MTU \(mtu)")
            // Without descriptors: no Find Information at all.
            let bare = try SynchronousATTServer(database, mtu: mtu)
            var withoutDescriptors = DatabaseDiscovery(descriptors: false)
            #expect(try withoutDescriptors.run(bare.answer).map { $0.characteristics.map(\.characteristic) }
                    == expected.map { $0.characteristics.map(\.characteristic) })
            #expect(!bare.requests.contains { if case .findInformationRequest = $0 { true } else { false } })
        }
    }

    /// The many-services database at MTU 247: the secondary service's characteristics are left out, the services
    /// without characteristics are there with none; characteristic discovery takes 25 Read By Type instead of 42 (a
    /// page ends wherever the UUID size changes, which this database does often) and descriptor discovery 13 Find
    /// Information instead of 17 (figures measured, pinned against regressions).
    @Test func manyServicesTakeAFewCharacteristicPages() throws {
        let server = try SynchronousATTServer(Self.manyServices(), mtu: 247)
        var discovery = DatabaseDiscovery()
        let found = try discovery.run(server.answer)
        #expect(found.count == 2 + 23)
        #expect(found.contains { $0.characteristics.isEmpty })
        let slow = try SynchronousATTServer(Self.manyServices(), mtu: 247)
        _ = try discoverPerService(slow.answer)
        func count(_ requests: [ATTPDU]) -> (characteristics: Int, descriptors: Int) {
            (requests.filter { if case .readByTypeRequest = $0 { true } else { false } }.count,
             requests.filter { if case .findInformationRequest = $0 { true } else { false } }.count)
        }
        let (whole, perService) = (count(server.requests), count(slow.requests))
        // A page ends where the UUID size changes, so the alternating sizes cost a page per run; per service, every
        // service with room for a characteristic costs one at least.
        #expect(whole.characteristics == 25 && perService.characteristics == 42, "\(whole) \(perService)")
        #expect(whole.descriptors == 13 && perService.descriptors == 17, "\(whole) \(perService)")
        let declared = found.reduce(0) { $0 + $1.characteristics.count }
        // GAP's two, GATT's three (Service Changed, Client Supported Features, Database Hash), then the services'.
        #expect(declared == 5 + (0..<24).filter { $0 != 7 }.reduce(0) { $0 + $1 % 4 })
    }

    /// A value handle past its service's end, accepted by the whole walk (the next service is in range), breaks
    /// the protocol as it does when the service is walked alone.
    @Test func aValueOutsideItsServiceIsRejectedInTheWholeWalk() {
        func group(_ start: AttributeHandle, _ end: AttributeHandle) -> ATTReadByGroupTypeResponse.Entry { .init(handle: start, endGroupHandle: end, value: [0x0F, 0x18]) }
        let script = ScriptedATTServer([
            .readByGroupTypeResponse(.init(entries: [group(0x01, 0x03), group(0x04, 0x08)])),
            .errorResponse(.init(requestOpcode: .readByGroupTypeRequest, handle: 0x09, error: .attributeNotFound)),
            // The last value takes the walk's last handle: the walk ends, and the split finds 0x04 outside 0x01–0x03.
            .readByTypeResponse(.init(entries: [.declaration(0x03, value: 0x04), .declaration(0x05, value: 0x06),
                                                .declaration(0x07, value: 0x08)])),
        ])
        var discovery = DatabaseDiscovery()
        #expect(throws: GATTError(.malformedResponse, "")) { try discovery.run(script.answer) }
        #expect(script.requests.count == 3)
        // No services: nothing more is asked.
        let none = ScriptedATTServer([.errorResponse(.init(requestOpcode: .readByGroupTypeRequest, handle: 0x01, error: .attributeNotFound))])
        var empty = DatabaseDiscovery()
        #expect((try? empty.run(none.answer)) == [])
        #expect(none.requests.count == 1)
    }
}
