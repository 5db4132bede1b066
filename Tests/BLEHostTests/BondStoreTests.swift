#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import BLEHost
import BLEProtocols
import BLEWire
import Foundation
import Testing

/// A fresh directory for one test, under the system's temporary directory.
struct TemporaryDirectory {
    let path: String

    init() throws {
        var template = Array("\(FileManager.default.temporaryDirectory.path)/swift-ble-bonds.XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { buffer in buffer.baseAddress.flatMap { mkdtemp($0) } }
        try #require(made != nil)
        path = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    func file(_ name: String) -> String { "\(path)/\(name)" }

    /// The names in the directory `relative` (the directory itself by default), sorted.
    func contents(_ relative: String = "") throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: relative.isEmpty ? path : file(relative)).sorted()
    }

    func remove() {
        // Undo any permissions a test took away, so that everything can go.
        _ = chmod(path, 0o700)
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// The permission bits of the file or directory at `path`.
func mode(_ path: String) -> mode_t? {
    var status = stat()
    guard stat(path, &status) == 0 else { return nil }
    return status.st_mode & 0o7777
}

func bytes(_ path: String) -> [UInt8]? {
    FileManager.default.contents(atPath: path).map { Array($0) }
}

func writeFile(_ path: String, _ text: String) throws {
    try Data(text.utf8).write(to: URL(fileURLWithPath: path))
}

enum StoreKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case memory, file
    var testDescription: String { rawValue }

    func make(in directory: TemporaryDirectory) -> any BondStore {
        switch self {
        case .memory: InMemoryBondStore()
        case .file: FileBondStore(path: directory.file("bonds.json"))
        }
    }
}

enum Fixture {
    static func address(_ text: String, _ type: LEAddressType) -> LEAddress {
        LEAddress(BluetoothAddress(text) ?? .zero, type: type)
    }

    static let localRandom = address("C0:11:22:33:44:55", .random)
    static let localPublic = address("00:AA:BB:CC:DD:EE", .public)
    static let peerPublic = address("00:1A:7D:DA:71:13", .public)
    static let peerRandom = address("D4:01:02:03:04:05", .random)
    /// The same 48 bits as `peerPublic`, as a random address: a different peer.
    static let peerSameBitsRandom = address("00:1A:7D:DA:71:13", .random)

    static func key(_ first: UInt8) -> [UInt8] { (0..<UInt8(16)).map { first &+ $0 } }

    static func bond(local: LEAddress, peer: LEAddress, key first: UInt8 = 0x10, created: Double = 1_790_000_000.5) -> Bond {
        Bond(local: local, peer: peer, peerKey: BondKey(longTermKey: key(first)), localKey: BondKey(longTermKey: key(first)),
             security: SMPSecurityLevel(secureConnections: true, authenticated: false, keySize: 16), created: created)
    }

    /// The static random address `full`'s peer paired through.
    static let pairedThrough = address("E7:E6:E5:E4:E3:E2", .random)

    /// A bond with every field set: a legacy pairing with distributed keys both ways, a Rand above 2⁵³, the address
    /// the peer paired through and the GATT server's state for it.
    static let full = Bond(
        local: localRandom, peer: peerPublic, pairedThrough: pairedThrough,
        peerKey: BondKey(longTermKey: key(0x00), ediv: 0x1234, rand: 0xFEDC_BA98_7654_3210),
        localKey: BondKey(longTermKey: key(0x10), ediv: 0xBEEF, rand: 0x0000_0000_0000_0001),
        peerIdentityResolvingKey: key(0x20), peerSignatureKey: key(0x30),
        security: SMPSecurityLevel(secureConnections: false, authenticated: true, keySize: 7), created: 1_790_000_000.5,
        gattClient: BondedGATTClient(serviceChangedConfiguration: 2, clientSupportedFeatures: 1, databaseHash: key(0x50)))

    /// `full` as a version 1 file has it: without the fields version 2 added.
    static var fullVersion1: Bond {
        var bond = full
        bond.pairedThrough = nil
        bond.gattClient = nil
        return bond
    }

    /// A Secure Connections bond with no optional field, whose peer has an identity type (written as a number).
    static let minimal = Bond(
        local: localRandom, peer: address("F0:0D:F0:0D:F0:0D", .randomIdentity), peerKey: nil, localKey: nil,
        security: SMPSecurityLevel(secureConnections: true, authenticated: false, keySize: 16), created: 1_700_000_000)

    static let identityKey = key(0x40)

    /// The file that holds `full`, then `minimal`, and `identityKey` for `localRandom`, as FileBondStore writes it
    /// (version 2).
    static let text = """
        {
          "bonds" : [
            {
              "authenticated" : true,
              "created" : 1790000000.5,
              "gatt_client" : {
                "client_supported_features" : 1,
                "database_hash" : "505152535455565758595a5b5c5d5e5f",
                "service_changed_cccd" : 2
              },
              "key_size" : 7,
              "local" : {
                "address" : "C0:11:22:33:44:55",
                "type" : "random"
              },
              "local_key" : {
                "ediv" : 48879,
                "ltk" : "101112131415161718191a1b1c1d1e1f",
                "rand" : "0000000000000001"
              },
              "paired_through" : {
                "address" : "E7:E6:E5:E4:E3:E2",
                "type" : "random"
              },
              "peer" : {
                "address" : "00:1A:7D:DA:71:13",
                "type" : "public"
              },
              "peer_csrk" : "303132333435363738393a3b3c3d3e3f",
              "peer_irk" : "202122232425262728292a2b2c2d2e2f",
              "peer_key" : {
                "ediv" : 4660,
                "ltk" : "000102030405060708090a0b0c0d0e0f",
                "rand" : "fedcba9876543210"
              },
              "secure_connections" : false
            },
            {
              "authenticated" : false,
              "created" : 1700000000,
              "key_size" : 16,
              "local" : {
                "address" : "C0:11:22:33:44:55",
                "type" : "random"
              },
              "peer" : {
                "address" : "F0:0D:F0:0D:F0:0D",
                "type" : 3
              },
              "secure_connections" : true
            }
          ],
          "identities" : [
            {
              "address" : "C0:11:22:33:44:55",
              "irk" : "404142434445464748494a4b4c4d4e4f",
              "type" : "random"
            }
          ],
          "version" : 2
        }

        """

    /// A version 1 file, as FileBondStore wrote it before version 2: `fullVersion1`, `minimal` and `identityKey`.
    static let textVersion1 = """
        {
          "bonds" : [
            {
              "authenticated" : true,
              "created" : 1790000000.5,
              "key_size" : 7,
              "local" : {
                "address" : "C0:11:22:33:44:55",
                "type" : "random"
              },
              "local_key" : {
                "ediv" : 48879,
                "ltk" : "101112131415161718191a1b1c1d1e1f",
                "rand" : "0000000000000001"
              },
              "peer" : {
                "address" : "00:1A:7D:DA:71:13",
                "type" : "public"
              },
              "peer_csrk" : "303132333435363738393a3b3c3d3e3f",
              "peer_irk" : "202122232425262728292a2b2c2d2e2f",
              "peer_key" : {
                "ediv" : 4660,
                "ltk" : "000102030405060708090a0b0c0d0e0f",
                "rand" : "fedcba9876543210"
              },
              "secure_connections" : false
            },
            {
              "authenticated" : false,
              "created" : 1700000000,
              "key_size" : 16,
              "local" : {
                "address" : "C0:11:22:33:44:55",
                "type" : "random"
              },
              "peer" : {
                "address" : "F0:0D:F0:0D:F0:0D",
                "type" : 3
              },
              "secure_connections" : true
            }
          ],
          "identities" : [
            {
              "address" : "C0:11:22:33:44:55",
              "irk" : "404142434445464748494a4b4c4d4e4f",
              "type" : "random"
            }
          ],
          "version" : 1
        }

        """
}

/// The behaviour every ``BondStore`` shares, run against each implementation.
@Suite struct BondStoreBehaviourTests {
    @Test(arguments: StoreKind.allCases)
    func saveReplacesTheBondOfTheSameLocalAndPeer(kind: StoreKind) throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = kind.make(in: directory)
        #expect(try store.allBonds().isEmpty)

        let a = Fixture.bond(local: Fixture.localRandom, peer: Fixture.peerPublic, key: 0x10)
        let b = Fixture.bond(local: Fixture.localRandom, peer: Fixture.peerRandom, key: 0x20)
        let c = Fixture.bond(local: Fixture.localPublic, peer: Fixture.peerPublic, key: 0x30)
        let d = Fixture.bond(local: Fixture.localRandom, peer: Fixture.peerSameBitsRandom, key: 0x40)
        for bond in [a, b, c, d] { try store.save(bond) }
        #expect(Set(try store.allBonds()) == [a, b, c, d])

        let newerA = Fixture.bond(local: Fixture.localRandom, peer: Fixture.peerPublic, key: 0x50, created: 1_800_000_000)
        try store.save(newerA)
        let all = try store.allBonds()
        #expect(all.count == 4)
        #expect(Set(all) == [newerA, b, c, d])
        #expect(Set(try store.bonds(local: Fixture.localRandom)) == [newerA, b, d])
        #expect(try store.bonds(local: Fixture.localPublic) == [c])
        #expect(try store.bonds(local: Fixture.peerRandom).isEmpty)

        try store.save(Fixture.full)
        try store.save(Fixture.minimal)
        #expect(Set(try store.allBonds()) == [Fixture.full, b, c, d, Fixture.minimal])
    }

    @Test(arguments: StoreKind.allCases)
    func removeWithAndWithoutLocal(kind: StoreKind) throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = kind.make(in: directory)
        let a = Fixture.bond(local: Fixture.localRandom, peer: Fixture.peerPublic)
        let b = Fixture.bond(local: Fixture.localPublic, peer: Fixture.peerPublic)
        let c = Fixture.bond(local: Fixture.localRandom, peer: Fixture.peerRandom)
        let d = Fixture.bond(local: Fixture.localPublic, peer: Fixture.peerSameBitsRandom)
        for bond in [a, b, c, d] { try store.save(bond) }

        #expect(try store.removeBonds(peer: Fixture.peerPublic, local: Fixture.localPublic) == 1)
        #expect(Set(try store.allBonds()) == [a, c, d])
        #expect(try store.removeBonds(peer: Fixture.peerPublic, local: Fixture.localPublic) == 0)
        #expect(try store.removeBonds(peer: Fixture.peerRandom, local: Fixture.localPublic) == 0)
        try store.save(b)
        #expect(try store.removeBonds(peer: Fixture.peerPublic, local: nil) == 2)
        #expect(Set(try store.allBonds()) == [c, d])
        #expect(try store.removeBonds(peer: Fixture.peerPublic, local: nil) == 0)
        #expect(try store.removeBonds(peer: Fixture.peerRandom, local: nil) == 1)
        #expect(try store.removeBonds(peer: Fixture.peerSameBitsRandom, local: nil) == 1)
        #expect(try store.allBonds().isEmpty)
    }

    @Test(arguments: StoreKind.allCases)
    func identityResolvingKeysPerLocalIdentity(kind: StoreKind) throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = kind.make(in: directory)
        #expect(try store.identityResolvingKey(local: Fixture.localRandom) == nil)

        try store.setIdentityResolvingKey(Fixture.key(0x01), local: Fixture.localRandom)
        try store.setIdentityResolvingKey(Fixture.key(0x02), local: Fixture.localPublic)
        // The same 48 bits with the other type are another identity.
        let sameBitsPublic = LEAddress(Fixture.localRandom.address, type: .public)
        #expect(try store.identityResolvingKey(local: sameBitsPublic) == nil)
        #expect(try store.identityResolvingKey(local: Fixture.localRandom) == Fixture.key(0x01))
        #expect(try store.identityResolvingKey(local: Fixture.localPublic) == Fixture.key(0x02))

        try store.setIdentityResolvingKey(Fixture.key(0x03), local: Fixture.localRandom)
        #expect(try store.identityResolvingKey(local: Fixture.localRandom) == Fixture.key(0x03))
        #expect(try store.identityResolvingKey(local: Fixture.localPublic) == Fixture.key(0x02))

        // IRKs and bonds do not disturb each other.
        try store.save(Fixture.full)
        #expect(try store.removeBonds(peer: Fixture.full.peer, local: nil) == 1)
        #expect(try store.identityResolvingKey(local: Fixture.localRandom) == Fixture.key(0x03))
        #expect(try store.allBonds().isEmpty)
    }
}

/// The JSON file behind ``FileBondStore``.
@Suite struct FileBondStoreTests {
    @Test func writesTheDocumentedFormatByteForByte() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = FileBondStore(path: directory.file("bonds.json"))
        try store.save(Fixture.full)
        try store.save(Fixture.minimal)
        try store.setIdentityResolvingKey(Fixture.identityKey, local: Fixture.localRandom)
        let written = String(decoding: bytes(store.path) ?? [], as: UTF8.self)
        #expect(written == Fixture.text)
    }

    @Test func readsTheDocumentedFormat() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("bonds.json")
        try writeFile(path, Fixture.text)
        let store = FileBondStore(path: path)
        #expect(try store.allBonds() == [Fixture.full, Fixture.minimal])
        #expect(try store.identityResolvingKey(local: Fixture.localRandom) == Fixture.identityKey)
        // Reading does not rewrite.
        #expect(String(decoding: bytes(path) ?? [], as: UTF8.self) == Fixture.text)
    }

    /// A version 1 file (before `paired_through` and `gatt_client`) reads as it is; the next change writes version 2.
    @Test func readsAVersion1FileAndWritesVersion2OnTheNextChange() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("bonds.json")
        try writeFile(path, Fixture.textVersion1)
        let store = FileBondStore(path: path)
        #expect(try store.allBonds() == [Fixture.fullVersion1, Fixture.minimal])
        #expect(try store.identityResolvingKey(local: Fixture.localRandom) == Fixture.identityKey)
        #expect(String(decoding: bytes(path) ?? [], as: UTF8.self) == Fixture.textVersion1)
        // The GATT server's state and the paired-through address are added to the old bond: the file is version 2.
        #expect(try store.updateBond(local: Fixture.localRandom, peer: Fixture.peerPublic) { bond in
            bond.pairedThrough = Fixture.full.pairedThrough
            bond.gattClient = Fixture.full.gattClient
        })
        #expect(String(decoding: bytes(path) ?? [], as: UTF8.self) == Fixture.text)
        #expect(try FileBondStore(path: path).allBonds() == [Fixture.full, Fixture.minimal])
    }

    /// An all-zero IRK is no IRK (Core 5.4, Vol 3, Part H, 2.4.2.1): one in a file (written before it was recognised)
    /// reads as none, and a bond made with one keeps none.
    @Test func anAllZeroIRKIsReadAsNone() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("bonds.json")
        try writeFile(path, FileBondStoreTests.fixture(replacing: "202122232425262728292a2b2c2d2e2f",
                                                       with: "00000000000000000000000000000000"))
        var expected = Fixture.full
        expected.peerIdentityResolvingKey = nil
        #expect(try FileBondStore(path: path).allBonds() == [expected, Fixture.minimal])
        let made = Bond(local: Fixture.localRandom, peer: Fixture.peerPublic, peerKey: nil, localKey: nil,
                        peerIdentityResolvingKey: [UInt8](repeating: 0, count: 16),
                        security: SMPSecurityLevel(secureConnections: true, authenticated: false, keySize: 16), created: 0)
        #expect(made.peerIdentityResolvingKey == nil)
    }

    @Test func readsCompactJSONWithUppercaseHexAndNumericTypes() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("bonds.json")
        try writeFile(path, """
            {"version":1,"identities":[{"address":"c0:11:22:33:44:55","type":1,"irk":"404142434445464748494A4B4C4D4E4F"}],
             "bonds":[{"local":{"address":"C0:11:22:33:44:55","type":"random"},"peer":{"address":"00:1a:7d:da:71:13","type":0},
             "peer_key":{"ltk":"000102030405060708090A0B0C0D0E0F","ediv":4660,"rand":"FEDCBA9876543210"},"peer_irk":null,
             "secure_connections":false,"authenticated":true,"key_size":7,"created":1790000000.5,"comment":"ignored"}]}
            """)
        let store = FileBondStore(path: path)
        var expected = Fixture.fullVersion1
        expected.localKey = nil
        expected.peerIdentityResolvingKey = nil
        expected.peerSignatureKey = nil
        #expect(try store.allBonds() == [expected])
        #expect(try store.identityResolvingKey(local: Fixture.localRandom) == Fixture.identityKey)
    }

    @Test func aMissingFileIsAnEmptyStoreAndIsNotCreatedByReading() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = FileBondStore(path: directory.file("missing/bonds.json"))
        #expect(try store.allBonds().isEmpty)
        #expect(try store.identityResolvingKey(local: Fixture.localRandom) == nil)
        #expect(try store.removeBonds(peer: Fixture.peerPublic, local: nil) == 0)
        #expect(try directory.contents().isEmpty)
    }

    @Test func fileIsOwnerOnlyAndDirectoriesAreCreatedOwnerOnly() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = FileBondStore(path: directory.file("data/swift-ble/bonds.json"))
        try store.save(Fixture.full)
        #expect(mode(store.path) == 0o600)
        #expect(mode(directory.file("data")) == 0o700)
        #expect(mode(directory.file("data/swift-ble")) == 0o700)

        // A file someone made readable by all is 0600 again after the next write.
        #expect(chmod(store.path, 0o644) == 0)
        try store.setIdentityResolvingKey(Fixture.identityKey, local: Fixture.localRandom)
        #expect(mode(store.path) == 0o600)
        #expect(try store.allBonds() == [Fixture.full])
    }

    @Test func writesLeaveNoTemporaryFilesBehind() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = FileBondStore(path: directory.file("bonds.json"))
        for index in 0..<5 {
            try store.save(Fixture.bond(local: Fixture.localRandom, peer: Fixture.peerPublic, key: UInt8(index)))
            try store.setIdentityResolvingKey(Fixture.key(UInt8(index)), local: Fixture.localPublic)
        }
        try store.removeBonds(peer: Fixture.peerPublic, local: nil)
        #expect(try directory.contents() == ["bonds.json"])
        // A refused write leaves nothing either.
        #expect(throws: BondStoreError.self) { try store.setIdentityResolvingKey([1, 2, 3], local: Fixture.localPublic) }
        #expect(try directory.contents() == ["bonds.json"])
    }

    @Test func twoStoresOnOnePathSeeEachOthersWrites() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let first = FileBondStore(path: directory.file("bonds.json"))
        let second = FileBondStore(path: directory.file("bonds.json"))
        try first.save(Fixture.full)
        #expect(try second.allBonds() == [Fixture.full])
        try second.save(Fixture.minimal)
        try second.setIdentityResolvingKey(Fixture.identityKey, local: Fixture.localRandom)
        #expect(try first.allBonds() == [Fixture.full, Fixture.minimal])
        #expect(try first.identityResolvingKey(local: Fixture.localRandom) == Fixture.identityKey)
        #expect(try first.removeBonds(peer: Fixture.full.peer, local: nil) == 1)
        #expect(try second.allBonds() == [Fixture.minimal])
    }

    @Test func concurrentSavesInOneProcessAreAllKept() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = FileBondStore(path: directory.file("bonds.json"))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<20 {
                group.addTask {
                    let peer = LEAddress(BluetoothAddress(UInt64(0xC0_0000_0000_00) + UInt64(index)), type: .random)
                    try store.save(Fixture.bond(local: Fixture.localPublic, peer: peer))
                }
            }
            try await group.waitForAll()
        }
        #expect(try store.allBonds().count == 20)
        #expect(try directory.contents() == ["bonds.json"])
    }

    /// Replaces exactly one occurrence of `old` in the fixture, so that one thing at a time is wrong.
    static func fixture(replacing old: String, with new: String) -> String {
        let parts = Fixture.text.components(separatedBy: old)
        return parts.count == 2 ? parts.joined(separator: new) : "fixture text \(old) not found once"
    }

    static let corruptFiles: [CorruptFile] = [
        CorruptFile("not JSON", "this is not JSON {", "not valid JSON"),
        CorruptFile("empty", "", "not valid JSON"),
        CorruptFile("a JSON array", "[1, 2, 3]", "Dictionary"),
        CorruptFile("no version", #"{"identities": [], "bonds": []}"#, "\"version\" is missing"),
        CorruptFile("version 3", fixture(replacing: #""version" : 2"#, with: #""version" : 3"#), "at .version: version 3"),
        CorruptFile("version 0", fixture(replacing: #""version" : 2"#, with: #""version" : 0"#), "at .version: version 0"),
        CorruptFile("version as text", fixture(replacing: #""version" : 2"#, with: #""version" : "2""#), "at .version:"),
        CorruptFile("a 15-octet Database Hash", fixture(replacing: "505152535455565758595a5b5c5d5e5f", with: "505152535455565758595a5b5c5d5e"), "at .bonds[0].gatt_client.database_hash:"),
        CorruptFile("a CCCD beyond 16 bits", fixture(replacing: #""service_changed_cccd" : 2"#, with: #""service_changed_cccd" : 65536"#), "at .bonds[0].gatt_client.service_changed_cccd:"),
        CorruptFile("features beyond 8 bits", fixture(replacing: #""client_supported_features" : 1"#, with: #""client_supported_features" : 256"#), "at .bonds[0].gatt_client.client_supported_features:"),
        CorruptFile("a bad paired-through address", fixture(replacing: #""address" : "E7:E6:E5:E4:E3:E2""#, with: #""address" : "E7:E6""#), "at .bonds[0].paired_through.address:"),
        CorruptFile("a 15-octet IRK", fixture(replacing: "404142434445464748494a4b4c4d4e4f", with: "404142434445464748494a4b4c4d4e"), "at .identities[0].irk:"),
        CorruptFile("a 17-octet CSRK", fixture(replacing: "303132333435363738393a3b3c3d3e3f", with: "303132333435363738393a3b3c3d3e3f40"), "at .bonds[0].peer_csrk:"),
        CorruptFile("a 15-octet LTK", fixture(replacing: "000102030405060708090a0b0c0d0e0f", with: "000102030405060708090a0b0c0d0e"), "at .bonds[0].peer_key.ltk:"),
        CorruptFile("an odd number of digits", fixture(replacing: "202122232425262728292a2b2c2d2e2f", with: "202122232425262728292a2b2c2d2e2f4"), "at .bonds[0].peer_irk:"),
        CorruptFile("bad hex", fixture(replacing: "202122232425262728292a2b2c2d2e2f", with: "2021222324252627zz292a2b2c2d2e2f"), "at .bonds[0].peer_irk:"),
        CorruptFile("separators in a key", fixture(replacing: "202122232425262728292a2b2c2d2e2f", with: "20:21:22:23:24:25:26:27:28:29:2a"), "at .bonds[0].peer_irk:"),
        CorruptFile("non-ASCII digits", fixture(replacing: "202122232425262728292a2b2c2d2e2f", with: "２０2122232425262728292a2b2c2d2e2f"), "at .bonds[0].peer_irk:"),
        CorruptFile("a short rand", fixture(replacing: "fedcba9876543210", with: "fedcba987654321"), "at .bonds[0].peer_key.rand:"),
        CorruptFile("a rand as a number", fixture(replacing: #""fedcba9876543210""#, with: "18364758544493064720"), "at .bonds[0].peer_key.rand:"),
        CorruptFile("an EDIV beyond 16 bits", fixture(replacing: #""ediv" : 4660"#, with: #""ediv" : 70000"#), "at .bonds[0].peer_key.ediv:"),
        CorruptFile("a bad address", fixture(replacing: #""address" : "00:1A:7D:DA:71:13""#, with: #""address" : "00:1A:7D:DA:71""#), "at .bonds[0].peer.address:"),
        CorruptFile("a non-hex address", fixture(replacing: #""address" : "00:1A:7D:DA:71:13""#, with: #""address" : "00:1A:7D:DA:71:GG""#), "at .bonds[0].peer.address:"),
        CorruptFile("an unknown type name", fixture(replacing: #""type" : "public""#, with: #""type" : "static""#), "at .bonds[0].peer.type:"),
        CorruptFile("a type beyond 8 bits", fixture(replacing: #""type" : 3"#, with: #""type" : 256"#), "at .bonds[1].peer.type:"),
        CorruptFile("a negative type", fixture(replacing: #""type" : 3"#, with: #""type" : -1"#), "at .bonds[1].peer.type:"),
        CorruptFile("no peer", fixture(replacing: "\"peer\" : {\n        \"address\" : \"F0", with: "\"peer_was\" : {\n        \"address\" : \"F0"), "at .bonds[1]: \"peer\" is missing"),
        CorruptFile("a key size of 0", fixture(replacing: #""key_size" : 16"#, with: #""key_size" : 0"#), "at .bonds[1].key_size:"),
        CorruptFile("a key size of 17", fixture(replacing: #""key_size" : 16"#, with: #""key_size" : 17"#), "at .bonds[1].key_size:"),
        CorruptFile("a created time out of range", fixture(replacing: "1700000000", with: "1e999"), "not valid JSON"),
        CorruptFile("bonds not an array", #"{"version": 1, "bonds": {"peer": "00:1A:7D:DA:71:13"}}"#, "at .bonds:"),
        CorruptFile("an identity not an object", #"{"version": 1, "identities": ["C0:11:22:33:44:55"]}"#, "at .identities[0]:"),
        CorruptFile("deep nesting", String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000), "not valid JSON"),
    ]

    /// A file that does not decode, and what the error names (where in the file, or what is wrong).
    struct CorruptFile: Sendable, CustomTestStringConvertible {
        var name: String
        var text: String
        var expectedReason: String
        init(_ name: String, _ text: String, _ expectedReason: String) {
            self.name = name
            self.text = text
            self.expectedReason = expectedReason
        }
        var testDescription: String { name }
    }

    @Test(arguments: corruptFiles)
    func corruptFilesThrowCorruptAndAreLeftAlone(file: CorruptFile) throws {
        let (name, text) = (file.name, file.text)
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        #expect(!text.hasPrefix("fixture text"), "\(name): \(text)")
        let path = directory.file("bonds.json")
        try writeFile(path, text)
        let store = FileBondStore(path: path)

        let error = #expect(throws: BondStoreError.self) { try store.allBonds() }
        #expect(error?.code == .corrupt, "\(name)")
        #expect(error?.reason.contains(path) == true, "\(name): \(error?.reason ?? "")")
        #expect(error?.reason.contains(file.expectedReason) == true, "\(name): \(error?.reason ?? "")")
        #expect((try? store.identityResolvingKey(local: Fixture.localRandom)) == nil)
        // Writes refuse too, rather than replace what someone may still want to repair.
        let saveError = #expect(throws: BondStoreError.self) { try store.save(Fixture.full) }
        #expect(saveError?.code == .corrupt)
        #expect(throws: BondStoreError.self) { try store.removeBonds(peer: Fixture.peerPublic, local: nil) }
        #expect(throws: BondStoreError.self) { try store.setIdentityResolvingKey(Fixture.identityKey, local: Fixture.localRandom) }
        #expect(String(decoding: bytes(path) ?? [], as: UTF8.self) == text)
    }

    @Test func errorsDoNotRepeatKeys() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("bonds.json")
        try writeFile(path, Self.fixture(replacing: "404142434445464748494a4b4c4d4e4f", with: "404142434445464748494a4b4c4d4e"))
        let error = #expect(throws: BondStoreError.self) { try FileBondStore(path: path).allBonds() }
        #expect(error?.code == .corrupt)
        #expect(error?.reason.contains("404142") == false)
        #expect(error?.reason.contains("irk") == true)
    }

    @Test func invalidUTF8IsCorrupt() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.file("bonds.json")
        try Data([0x7B, 0x22, 0xFF, 0xFE, 0x22, 0x3A, 0x31, 0x7D, 0x00]).write(to: URL(fileURLWithPath: path))
        let error = #expect(throws: BondStoreError.self) { try FileBondStore(path: path).allBonds() }
        #expect(error?.code == .corrupt)
    }

    @Test func bondsThatCouldNotBeReadBackAreRefused() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = FileBondStore(path: directory.file("bonds.json"))
        var shortKey = Fixture.full
        shortKey.peerKey?.longTermKey = Array(Fixture.key(0).prefix(15))
        var badSize = Fixture.full
        badSize.security.keySize = 20
        var notFinite = Fixture.full
        notFinite.created = .nan
        for bond in [shortKey, badSize, notFinite] {
            let error = #expect(throws: BondStoreError.self) { try store.save(bond) }
            #expect(error?.code == .corrupt)
            #expect(error?.reason.contains(store.path) == true)
        }
        let error = #expect(throws: BondStoreError.self) { try store.setIdentityResolvingKey(Array(repeating: 1, count: 17), local: Fixture.localRandom) }
        #expect(error?.code == .corrupt)
        // Nothing was written, not even an empty file.
        #expect(try directory.contents().isEmpty)
    }

    @Test func aFileWhereADirectoryShouldBeIsAnIOError() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try writeFile(directory.file("plain"), "not a directory")
        let store = FileBondStore(path: directory.file("plain/bonds.json"))
        let readError = #expect(throws: BondStoreError.self) { try store.allBonds() }
        #expect(readError?.code == .io)
        let writeError = #expect(throws: BondStoreError.self) { try store.save(Fixture.full) }
        #expect(writeError?.code == .io)
    }

    @Test func aDirectoryThatCannotBeCreatedIsAnIOError() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        // A symbolic link to nowhere: the file is missing (an empty store), but its directory cannot be made.
        #expect(symlink(directory.file("nowhere"), directory.file("dangling")) == 0)
        let store = FileBondStore(path: directory.file("dangling/bonds.json"))
        #expect(try store.allBonds().isEmpty)
        let error = #expect(throws: BondStoreError.self) { try store.save(Fixture.full) }
        #expect(error?.code == .io)
        #expect(error?.reason.contains(store.path) == true)
        #expect(try directory.contents() == ["dangling"])
    }

    @Test(.enabled(if: geteuid() != 0, "root writes into read-only directories"))
    func anUnwritableDirectoryIsAnIOError() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = FileBondStore(path: directory.file("bonds.json"))
        try store.save(Fixture.minimal)
        #expect(chmod(directory.path, 0o500) == 0)
        let error = #expect(throws: BondStoreError.self) { try store.save(Fixture.full) }
        #expect(error?.code == .io)
        #expect(try store.allBonds() == [Fixture.minimal])
    }

    @Test func defaultPathFollowsXDGThenHome() {
        #expect(FileBondStore.defaultPath(environment: ["XDG_DATA_HOME": "/data", "HOME": "/home/ada"])
            == "/data/swift-ble/bonds.json")
        #expect(FileBondStore.defaultPath(environment: ["XDG_DATA_HOME": "/data/", "HOME": "/home/ada"])
            == "/data/swift-ble/bonds.json")
        #if canImport(Darwin)
        let home = "/home/ada/Library/Application Support/swift-ble/bonds.json"
        #else
        let home = "/home/ada/.local/share/swift-ble/bonds.json"
        #endif
        // A relative or empty XDG_DATA_HOME is ignored, as the XDG Base Directory Specification asks.
        #expect(FileBondStore.defaultPath(environment: ["XDG_DATA_HOME": "data", "HOME": "/home/ada"]) == home)
        #expect(FileBondStore.defaultPath(environment: ["XDG_DATA_HOME": "", "HOME": "/home/ada"]) == home)
        #expect(FileBondStore.defaultPath(environment: ["HOME": "/home/ada"]) == home)
        #expect(FileBondStore.defaultPath.hasSuffix("swift-ble/bonds.json"))
    }
}
