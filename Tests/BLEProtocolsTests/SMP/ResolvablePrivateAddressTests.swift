import BLEProtocols
import BLEWire
import Testing

/// Resolvable private addresses (Core 5.4, Vol 6, Part B, 1.3.2.2) and their rotation.
@Suite struct ResolvablePrivateAddressTests {
    /// The IRK of the specification's ah sample data (Core 5.4, Vol 3, Part H, D.7), most significant octet first.
    let specIRK = [UInt8](hex: "ec0234a357c8ad05341010a60a397d9b") ?? []
    let otherIRK: [UInt8] = Array(1...16)

    func random(_ text: String) -> LEAddress {
        LEAddress(BluetoothAddress(text) ?? .zero, type: .random)
    }

    @Test func specificationSampleData() throws {
        // prand 0x708194 → hash 0x0dfbaa (Core 5.4, Vol 3, Part H, D.7): the address is prand || hash.
        let address = try ResolvablePrivateAddress.make(irk: specIRK, random: [0x70, 0x81, 0x94])
        #expect(address == random("70:81:94:0D:FB:AA"))
        #expect(address.kind == .randomResolvable)
        #expect(ResolvablePrivateAddress.resolves(random("70:81:94:0D:FB:AA"), irk: specIRK))
        // One bit of the hash changed: no longer this IRK's.
        #expect(!ResolvablePrivateAddress.resolves(random("70:81:94:0D:FB:AB"), irk: specIRK))
    }

    @Test(arguments: [[UInt8]([0x00, 0x00, 0x01]), [0x3F, 0xFF, 0xFE], [0xC5, 0x12, 0x9A], [0x81, 0x00, 0x00], [0x12, 0x34, 0x56]])
    func makeThenResolve(randomOctets: [UInt8]) throws {
        let address = try ResolvablePrivateAddress.make(irk: specIRK, random: randomOctets)
        #expect(address.type == .random)
        #expect(address.address.topBits == 0b01)
        #expect(address.kind == .randomResolvable)
        // The random part of prand is kept.
        #expect(address.address.bytes.prefix(3).elementsEqual([randomOctets[0] & 0x3F | 0x40, randomOctets[1], randomOctets[2]]))
        #expect(ResolvablePrivateAddress.resolves(address, irk: specIRK))
        #expect(!ResolvablePrivateAddress.resolves(address, irk: otherIRK))
    }

    @Test func randomPartOfAllZerosOrAllOnesIsNudged() throws {
        // 22 random bits of zeros (whatever the top two bits were) become …01; all ones become …10.
        for octets: [UInt8] in [[0x00, 0x00, 0x00], [0xC0, 0x00, 0x00], [0x40, 0x00, 0x00]] {
            let address = try ResolvablePrivateAddress.make(irk: specIRK, random: octets)
            #expect(Array(address.address.bytes.prefix(3)) == [0x40, 0x00, 0x01])
            #expect(address.isValid && ResolvablePrivateAddress.resolves(address, irk: specIRK))
        }
        for octets: [UInt8] in [[0xFF, 0xFF, 0xFF], [0x3F, 0xFF, 0xFF], [0x7F, 0xFF, 0xFF]] {
            let address = try ResolvablePrivateAddress.make(irk: specIRK, random: octets)
            #expect(Array(address.address.bytes.prefix(3)) == [0x7F, 0xFF, 0xFE])
            #expect(address.isValid && ResolvablePrivateAddress.resolves(address, irk: specIRK))
        }
    }

    @Test func wrongSizesThrow() {
        #expect(throws: SMPCrypto.Failure.self) { try ResolvablePrivateAddress.make(irk: specIRK, random: [1, 2]) }
        #expect(throws: SMPCrypto.Failure.self) { try ResolvablePrivateAddress.make(irk: specIRK, random: [1, 2, 3, 4]) }
        #expect(throws: SMPCrypto.Failure.self) { try ResolvablePrivateAddress.make(irk: Array(specIRK.prefix(15)), random: [1, 2, 3]) }
        // An IRK of the wrong size resolves nothing (rather than throwing).
        #expect(!ResolvablePrivateAddress.resolves(random("70:81:94:0D:FB:AA"), irk: Array(specIRK.prefix(15))))
    }

    @Test func onlyRandomResolvableAddressesResolve() throws {
        let bytes = BluetoothAddress("70:81:94:0D:FB:AA") ?? .zero
        // The same 48 bits as a public address, or as an identity type, are not a private address.
        #expect(!ResolvablePrivateAddress.resolves(LEAddress(bytes, type: .public), irk: specIRK))
        #expect(!ResolvablePrivateAddress.resolves(LEAddress(bytes, type: .publicIdentity), irk: specIRK))
        #expect(!ResolvablePrivateAddress.resolves(LEAddress(bytes, type: .randomIdentity), irk: specIRK))
        // A static random and a non-resolvable private address carrying this IRK's hash of their prand.
        for top: UInt8 in [0xC0, 0x00] {
            let prand: [UInt8] = [0x30 | top, 0x81, 0x94]
            let hash = try SMPCrypto.ah(irk: specIRK, prand: prand)
            let address = LEAddress(BluetoothAddress(bigEndian: prand + hash) ?? .zero, type: .random)
            #expect(address.kind != .randomResolvable)
            #expect(!ResolvablePrivateAddress.resolves(address, irk: specIRK))
        }
        // A prand whose random part is all zeros is not a valid resolvable address, even with the right hash.
        let zeroPrand: [UInt8] = [0x40, 0x00, 0x00]
        let invalid = LEAddress(BluetoothAddress(bigEndian: zeroPrand + (try SMPCrypto.ah(irk: specIRK, prand: zeroPrand))) ?? .zero,
                                type: .random)
        #expect(!ResolvablePrivateAddress.resolves(invalid, irk: specIRK))
    }

    @Test func resolveFindsTheEntryWhoseIRKMatches() throws {
        let entries: [(irk: [UInt8], value: String)] = [
            (irk: otherIRK, value: "other"),
            (irk: [1, 2, 3], value: "malformed"),
            (irk: specIRK, value: "spec"),
            (irk: specIRK, value: "spec again"),
        ]
        let address = try ResolvablePrivateAddress.make(irk: specIRK, random: [0x11, 0x22, 0x33])
        #expect(ResolvablePrivateAddress.resolve(address, among: entries) == "spec")
        let otherAddress = try ResolvablePrivateAddress.make(irk: otherIRK, random: [0x11, 0x22, 0x33])
        #expect(ResolvablePrivateAddress.resolve(otherAddress, among: entries) == "other")
        let stranger = try ResolvablePrivateAddress.make(irk: Array(repeating: 0xAA, count: 16), random: [0x11, 0x22, 0x33])
        #expect(ResolvablePrivateAddress.resolve(stranger, among: entries) == nil)
        #expect(ResolvablePrivateAddress.resolve(LEAddress(address.address, type: .public), among: entries) == nil)
        #expect(ResolvablePrivateAddress.resolve(address, among: [(irk: [UInt8], value: Int)]()) == nil)
    }

    @Test func rotationIsDueEveryInterval() {
        var rotation = PrivateAddressRotation()
        #expect(rotation.interval == .seconds(900))
        #expect(rotation.lastChange == nil)
        // Nothing set yet: due at once.
        #expect(rotation.isDue(at: .seconds(5)))
        #expect(rotation.timeUntilDue(at: .seconds(5)) == .zero)

        rotation.didSetAddress(at: .seconds(5))
        #expect(rotation.lastChange == .seconds(5))
        #expect(!rotation.isDue(at: .seconds(5)))
        #expect(!rotation.isDue(at: .seconds(904) + .milliseconds(999)))
        #expect(rotation.timeUntilDue(at: .seconds(605)) == .seconds(300))
        #expect(rotation.isDue(at: .seconds(905)))
        #expect(rotation.isDue(at: .seconds(4000)))

        rotation.didSetAddress(at: .seconds(905))
        #expect(!rotation.isDue(at: .seconds(1000)))
        #expect(rotation.isDue(at: .seconds(1805)))
    }

    @Test func rotationWithAnotherIntervalAndAClockThatWentBack() {
        var rotation = PrivateAddressRotation(interval: .seconds(60))
        rotation.didSetAddress(at: .seconds(100))
        #expect(!rotation.isDue(at: .seconds(159)))
        #expect(rotation.timeUntilDue(at: .seconds(130)) == .seconds(30))
        #expect(rotation.isDue(at: .seconds(160)))
        // A reading before the last change: how long the address has been used is unknown, so rotate.
        #expect(rotation.isDue(at: .seconds(99)))
        #expect(rotation.timeUntilDue(at: .seconds(99)) == .zero)
        // A changed interval applies to the current address.
        rotation.interval = .seconds(10)
        #expect(rotation.isDue(at: .seconds(110)))
        #expect(!rotation.isDue(at: .seconds(109)))
    }
}
