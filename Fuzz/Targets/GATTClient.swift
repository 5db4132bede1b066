import enum BLE.SampleDevice
import BLEHost
import BLEProtocols
import BLEWire

// The GATT client procedures (discovery, MTU exchange, reads, long writes, Read By Type, Read Multiple) fed the
// server's responses from the input: the first byte picks the procedure, then each chunk that decodes as an ATT
// PDU answers its latest request. Invariants: a procedure ends with a value or a GATTError, never a crash; services
// found have start ≤ end, and primary services rise strictly; every request a procedure makes encodes and decodes to itself.
enum GATTClientFuzz {
    static func run(_ bytes: [UInt8]) {
        var input = FuzzInput(bytes)
        let selector = input.byte() ?? 0
        withProcedure(selector) { procedure in drive(procedure, &input) }
    }

    /// Calls `body` with the procedure `selector` names.
    static func withProcedure<R>(_ selector: UInt8, _ body: (any GATTProcedure) -> R) -> R {
        switch selector % 11 {
        case 0: body(PrimaryServiceDiscovery())
        case 1: body(PrimaryServiceDiscovery(uuid: 0x180F))
        case 2: body(CharacteristicDiscovery(in: 0x0001...0xFFFF))
        case 3: body(DescriptorDiscovery(in: 0x0001...0xFFFF))
        case 4: body(IncludedServiceDiscovery(of: GATTService(uuid: 0x1800, isPrimary: true, startHandle: 1, endHandle: 0xFFFF)))
        case 5: body(MTUExchange(clientMTU: 247))
        case 6: body(ValueRead(handle: 0x0003, mtu: 23))
        case 7: body(ValueWrite(handle: longWritableHandle, value: Array(repeating: 0x42, count: 60), mtu: 23))
        case 8: body(ValueWrite(handle: 0x0003, value: [1, 2], mtu: 23))
        case 9: body(ReadByType(type: 0x2A00))
        default: body(MultipleRead(handles: [0x0003, 0x0005]))
        }
    }

    static func drive<P: GATTProcedure>(_ start: P, _ input: inout FuzzInput) {
        var procedure = start
        do {
            var step = try procedure.start()
            while case .request(let request) = step {
                invariant((try? ATTPDU(bytes: request.encoded)) == request, "a request that does not re-encode: \(request)")
                guard let chunk = input.chunk() else { return }
                guard let response = try? ATTPDU(bytes: chunk) else { continue }
                step = try procedure.receive(response)
            }
            if case .finished(let output) = step, let services = output as? [GATTService] {
                for service in services { invariant(service.startHandle <= service.endHandle, "service \(service) inverted") }
                // Primary services come in handle order; included services in the order of their include declarations,
                // which may reference services anywhere in the database (the fuzzer's first finding: an ordering
                // invariant wrongly applied to them).
                for (a, b) in zip(services, services.dropFirst()) where P.self == PrimaryServiceDiscovery.self {
                    invariant(a.startHandle < b.startHandle, "services out of order: \(a), \(b)")
                }
            }
        } catch {
            // A GATTError: what a procedure must do with a response it cannot use.
        }
    }

    /// The value handle of the lab device's 512-byte writable characteristic.
    static let longWritableHandle: AttributeHandle = {
        var discovery = CharacteristicDiscovery(in: 0x0001...0xFFFF)
        let characteristics = (try? discovery.run(labServer())) ?? []
        return characteristics.first { $0.uuid == SampleDevice.customLongWritable }?.valueHandle ?? 0x0003
    }()

    /// A synchronous server over a fresh copy of the lab database, recording the responses it gives.
    final class Recorder {
        var database = SampleDevice.lab.database(name: "lab")
        var connection = ATTServerConnection()
        var responses: [[UInt8]] = []

        func answer(_ request: ATTPDU) throws(GATTError) -> ATTPDU {
            let output = ATTServer.handle(request.encoded, connection: &connection, database: &database)
            guard let bytes = output.response, let response = try? ATTPDU(bytes: bytes) else {
                throw GATTError(.malformedResponse, "no response")
            }
            responses.append(bytes)
            return response
        }
    }

    static func labServer() -> (ATTPDU) throws(GATTError) -> ATTPDU {
        let recorder = Recorder()
        return { (request: ATTPDU) throws(GATTError) -> ATTPDU in try recorder.answer(request) }
    }

    static func record<P: GATTProcedure>(_ start: P) -> [[UInt8]] {
        var procedure = start
        let recorder = Recorder()
        _ = try? procedure.run { (request: ATTPDU) throws(GATTError) -> ATTPDU in try recorder.answer(request) }
        return recorder.responses
    }

    /// Each procedure run against the lab database, its responses recorded; plus a few hostile answers.
    static func seeds() -> [[UInt8]] {
        var seeds = (0..<11).map { (selector: UInt8) in
            [selector] + withProcedure(selector) { record($0) }.flatMap { [UInt8(min(255, $0.count))] + $0.prefix(255) }
        }
        seeds.append([0] + [7] + hex("11 06 05 00 01 00 0F 18"))                  // handles going backwards
        seeds.append([2] + [9] + hex("09 07 02 00 02 FF FF 00 2A"))               // value handle 0xFFFF
        seeds.append([0] + [5] + hex("01 10 01 00 0A"))                           // Attribute Not Found at once
        seeds.append([6] + [5] + hex("01 08 03 00 02"))                           // Error Response naming another opcode
        return seeds
    }
}
