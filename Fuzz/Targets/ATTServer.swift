import enum BLE.SampleDevice
import BLEHost
import BLEProtocols
import BLEWire

// The ATT server over the lab sample device's database (SampleDevice.lab), fed a sequence of requests and commands
// from the client, with the link's security changing between them. Invariants: commands never get a response; a
// response fits the negotiated MTU and decodes as an ATT PDU; the MTU stays within 23...517.
enum ATTServerFuzz {
    /// The lab sample device's database, built once.
    static let lab = SampleDevice.lab.database(name: "lab")

    static func run(_ bytes: [UInt8]) {
        var input = FuzzInput(bytes)
        var database = lab
        var connection = ATTServerConnection()
        while let tag = input.byte(), let chunk = input.chunk() {
            if tag & 1 == 1 {
                connection.isEncrypted = tag & 2 != 0
                connection.isAuthenticated = tag & 4 != 0
                connection.isSecureConnections = tag & 8 != 0
                connection.keySize = 7 + Int(tag >> 4) % 10
                continue
            }
            let output = ATTServer.handle(chunk, connection: &connection, database: &database)
            invariant((23...517).contains(connection.mtu), "MTU \(connection.mtu)")
            guard let response = output.response else { continue }
            invariant(chunk.first.map { $0 & 0x40 == 0 } ?? true, "a command got a response: \(chunk) → \(response)")
            invariant(response.count <= connection.mtu, "a response of \(response.count) bytes beyond MTU \(connection.mtu)")
            invariant((try? ATTPDU(bytes: response)) != nil, "a response that does not decode: \(response)")
        }
    }

    static func seeds() -> [[UInt8]] {
        let requests: [[UInt8]] = [
            "02 F7 00", "04 01 00 FF FF", "06 01 00 FF FF 00 28 0F 18", "08 01 00 FF FF 03 28",
            "08 01 00 FF FF 00 2A", "0A 03 00", "0C 03 00 16 00", "0E 03 00 05 00", "10 01 00 FF FF 00 28",
            "10 01 00 FF FF 01 28", "12 0F 00 01 00", "52 0F 00 01", "16 20 00 00 00 01 02 03", "18 01", "18 00",
            "20 03 00 05 00", "1E", "0A 00 00", "04 05 00 01 00", "FF", "",
        ].map(hex)
        var seeds = requests.map { FuzzInput.events([(0, $0)]) }
        // Walk the whole database: MTU, services, characteristics, then read every handle (as the GATT client would).
        var walk: [(tag: UInt8, payload: [UInt8])] = [(0, hex("02 F7 00")), (0, hex("10 01 00 FF FF 00 28")),
                                                      (0, hex("08 01 00 FF FF 03 28")), (0, hex("04 01 00 FF FF"))]
        walk += (1...40).map { (tag: 0, payload: [0x0A, UInt8($0), 0x00]) }
        seeds.append(FuzzInput.events(walk))
        // An encrypted link, a CCCD write and a long write.
        seeds.append(FuzzInput.events([(0x0F | 0x90, []), (0, hex("12 10 00 01 00")), (0, hex("16 0D 00 00 00 41 42 43")),
                                       (0, hex("16 0D 00 03 00 44 45")), (0, hex("18 01")), (0, hex("0C 0D 00 03 00"))]))
        return seeds
    }
}
