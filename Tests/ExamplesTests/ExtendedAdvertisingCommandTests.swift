import BLE
import Foundation
import Testing

/// `ble scan --phy` and `ble serve --extended [--coded] [--adv-data]` as processes on a private air: the PHY and PDU
/// kind in text and JSON, scans that hear only their PHY, large data, a connection to the extended advertiser, and a
/// Core 4.1 controller refusing.
@Suite(.timeLimit(.minutes(3))) struct ExtendedAdvertisingCommandTests {
    static func json(_ line: String) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
    }

    /// `ble scan` on served controller `index` with `arguments`; its JSON lines by name.
    static func scan(_ air: DemoAir, _ index: Int, _ arguments: [String]) async throws -> [String: [String: Any]] {
        let scan = try DemoProcess("ble", arguments: ["scan", "--hci", air.specification(index), "--json", "--timeout", "2"] + arguments,
                                   hci: nil)
        let (status, lines) = await scan.finish()
        #expect(status == 0, "\(lines)")
        var found: [String: [String: Any]] = [:]
        for line in lines {
            if let object = json(line), let name = object["name"] as? String { found[name] = object }
        }
        return found
    }

    @Test func scanByPHYFindsExtendedServersAndACentralConnects() async throws {
        let air = try DemoAir(ports: 3)
        defer { air.shutdown() }
        let far = try DemoProcess("ble", arguments: ["serve", "--hci", air.specification(0), "--json", "--name", "Far Lab", "--extended",
                                                     "--coded", "--run-for", "60"], hci: nil)
        // Three manufacturer data structures of 249 octets: 768 bytes with the name.
        let extra = (0..<3).map { i in "f9ffffff" + String(repeating: String(format: "%02x", i + 1), count: 246) }.joined()
        let big = try DemoProcess("ble", arguments: ["serve", "--hci", air.specification(1), "--json", "--name", "Big Lab", "--extended",
                                                     "--adv-data", extra, "--run-for", "60"], hci: nil)
        let farServing = await far.waitFor { $0.contains(#""event":"serving""#) }
        let bigServing = await big.waitFor { $0.contains(#""event":"serving""#) }
        #expect(farServing?.contains(#""extended":true"#) == true && farServing?.contains(#""phy":"Coded""#) == true, "\(farServing ?? "-")")
        #expect(bigServing?.contains(#""extended":true"#) == true, "\(bigServing ?? "-")")

        let both = try await Self.scan(air, 2, ["--phy", "both"])
        let farFound = try #require(both["Far Lab"], "\(both.keys)")
        let farAir = try #require(farFound["advertising"] as? [String: Any])
        #expect(farAir["phy"] as? String == "Coded" && farAir["extended"] as? Bool == true && farAir["sid"] as? Int == 0)
        #expect(farAir["secondaryPHY"] as? String == "Coded" && farFound["connectable"] as? Bool == true)
        // --adv-data goes in a second, non-connectable extended advertisement (connectable ones carry at most 245 bytes).
        #expect(both["Big Lab"]?["connectable"] as? Bool == true, "\(both.keys)")
        let bigFound = try #require(both["Big Lab Data"], "\(both.keys)")
        let bigAir = try #require(bigFound["advertising"] as? [String: Any])
        #expect(bigAir["phy"] as? String == "1M" && bigAir["extended"] as? Bool == true && bigAir["sid"] as? Int == 1)
        #expect((bigAir["dataLength"] as? Int ?? 0) > 750 && bigAir["truncated"] as? Bool == false)
        #expect((bigFound["manufacturer"] as? [Any])?.count == 3 && bigFound["connectable"] as? Bool == false)
        // `1m,coded` (the PHYs listed) is `both`.
        #expect(Set(try await Self.scan(air, 2, ["--phy", "coded,1m"]).keys) == ["Far Lab", "Big Lab", "Big Lab Data"])
        // A scan of one PHY hears only the server on it; a text line names the PHY and the PDU kind.
        #expect(Set(try await Self.scan(air, 2, ["--phy", "coded"]).keys) == ["Far Lab"])
        #expect(Set(try await Self.scan(air, 2, ["--phy", "1m"]).keys) == ["Big Lab", "Big Lab Data"])
        let text = try DemoProcess("ble", arguments: ["scan", "--hci", air.specification(2), "--timeout", "2", "--phy", "coded"], hci: nil)
        let (_, lines) = await text.finish()
        #expect(lines.contains { $0.contains(#""Far Lab""#) && $0.contains("[Coded extended SID 0 secondary Coded") }, "\(lines)")

        // An in-process central connects to the LE Coded server and reads its name.
        let central = try await Central(transport: air.air.addController(.init(position: .init(x: 1))).makeHostTransport())
        var found: DiscoveredPeripheral?
        for try await device in try await central.scan(timeout: .seconds(10), phys: .leCoded) where device.name == "Far Lab" {
            found = device
            break
        }
        let device = try #require(found)
        let peripheral = try await central.connect(device, timeout: .seconds(10))
        let gap = try await peripheral.discoverServices([0x1800])
        let name = try await peripheral.discoverCharacteristics([0x2A00], for: try #require(gap.first))
        #expect(try await peripheral.readValue(for: try #require(name.first)) == Array("Far Lab".utf8))
        #expect(await far.waitFor { $0.contains("connected") } != nil)
        try await central.disconnect(peripheral)
        _ = await far.finish(timeout: .milliseconds(10))
        _ = await big.finish(timeout: .milliseconds(10))
    }

    /// Runs `ble` with `arguments` to its end; its exit status and standard error.
    static func run(_ arguments: [String]) async throws -> (status: Int32, errors: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("ble")
        process.arguments = arguments
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let data = errors.fileHandleForReading.readDataToEndOfFile()
        while process.isRunning { try await Task.sleep(for: .milliseconds(20)) }
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    /// `ble proxy --phy 1m,coded` (the issue's spelling) scans both PHYs, as `--phy both` does; a PHY it does not know
    /// in the list is refused before anything starts.
    @Test func proxyTakesThePHYsAsAList() async throws {
        let air = try DemoAir(ports: 1)
        defer { air.shutdown() }
        let proxy = try DemoProcess("ble", arguments: ["proxy", "--hci", air.specification(0), "--listen", "127.0.0.1:0", "--insecure-plaintext",
                                                       "--no-mdns", "--phy", "1m,coded"], hci: nil)
        let listening = await proxy.waitFor { $0.contains("listening on") }
        #expect(listening?.contains("scanning both,") == true, "\(listening ?? "-")")
        _ = await proxy.finish(timeout: .milliseconds(100))
        for wrong in ["1m,2m", "1m,", "coded,both"] {
            let refused = try await Self.run(["proxy", "--hci", air.specification(0), "--listen", "127.0.0.1:0", "--insecure-plaintext",
                                              "--phy", wrong])
            #expect(refused.status != 0 && refused.errors.contains("--phy"), "\(wrong): \(refused.errors)")
        }
    }

    @Test func aCore41ControllerRefusesExtendedServingAndCodedScanning() async throws {
        let air = try DemoAir(ports: 2, profiles: [.bluetooth41, .bluetooth41])
        defer { air.shutdown() }
        let serve = try await Self.run(["serve", "--hci", air.specification(0), "--extended", "--run-for", "5"])
        #expect(serve.status != 0)
        #expect(serve.errors.contains("does not support LE extended advertising"), "\(serve.errors)")
        let scan = try await Self.run(["scan", "--hci", air.specification(1), "--phy", "coded", "--timeout", "1"])
        #expect(scan.status != 0)
        #expect(scan.errors.contains("does not support LE extended advertising"), "\(scan.errors)")
    }
}
