import ArgumentParser
import BLEHost
import BLEProtocols
import BLEVirtualController
import BLEWire
import Foundation

/// A running peripheral: GATT server, advertising restarted after each connection so several centrals can connect,
/// heart-rate notifications every `interval`. The lab device's test characteristics behave as ``SampleDevice``
/// describes: a notification burst to each central that subscribes to it, numbered indications (each confirmed before
/// the next), and a control point that disconnects the central writing `disconnect`.
actor SamplePeripheral {
    let host: HCIHost
    let engine: GATTEngine
    let device: SampleDevice
    let name: String
    var tasks: [Task<Void, Never>] = []

    init(host: HCIHost, device: SampleDevice, name: String) {
        self.host = host
        self.device = device
        self.name = name
        self.engine = GATTEngine(host: host, database: device.database(name: name))
    }

    func start(notifyEvery interval: Duration = .seconds(1), log: (@Sendable (String, [String: String]) -> Void)? = nil) async throws {
        await engine.start()
        try await host.startAdvertising(device.advertising(name: name))
        let events = await host.events()
        let serverEvents = await engine.serverEvents()
        let host = host, options = device.advertising(name: name), engine = engine
        tasks.append(Task {
            for await event in events {
                switch event {
                case .connected(let c):
                    log?("connected: \(c.peer.address) handle \(c.handle)", ["event": "connected", "peer": c.peer.address.description, "handle": String(c.handle)])
                    try? await host.startAdvertising(options)
                case .disconnected(let c, let reason):
                    log?("disconnected: handle \(c.handle), \(reason)", ["event": "disconnected", "handle": String(c.handle), "reason": "\(reason)"])
                    try? await host.startAdvertising(options)
                default: break
                }
            }
        })
        let database = await engine.database
        let burst = database.valueHandle(of: SampleDevice.customBurst)
        let indicating = database.valueHandle(of: SampleDevice.customIndicate)
        let control = database.valueHandle(of: SampleDevice.customControl)
        tasks.append(Task {
            for await e in serverEvents {
                let link = e.connection
                switch e.event {
                case .wrote(let handle, let value, let withResponse):
                    log?("write from handle \(link) to 0x\(String(handle, radix: 16)) (\(withResponse ? "request" : "command")): \(show(value))",
                         ["event": "write", "connection": String(link), "attribute": String(handle), "value": value.hexString()])
                    if handle == control, value == Array("disconnect".utf8) {
                        log?("control point: disconnecting handle \(link)", ["event": "disconnecting", "connection": String(link)])
                        Task {
                            // After the Write Response has left (it is queued before this event is delivered).
                            try? await Task.sleep(for: .milliseconds(100))
                            try? await host.disconnect(link)
                        }
                    }
                case .subscriptionChanged(let handle, let notify, let indicate):
                    log?("subscription from handle \(link) to 0x\(String(handle, radix: 16)): notify \(notify) indicate \(indicate)",
                         ["event": "subscription", "connection": String(link), "attribute": String(handle), "notify": "\(notify)",
                          "indicate": "\(indicate)"])
                    if let burst, handle == burst, notify {
                        Task {
                            var sent = 0
                            for index in 0..<SampleDevice.burstCount {
                                guard let reached = try? await engine.updateValue(SampleDevice.burstValue(index), for: burst, onLinks: [link]),
                                      !reached.isEmpty else { break }
                                sent += 1
                            }
                            log?("burst: \(sent) notification(s) sent to handle \(link)", ["event": "burst", "connection": String(link), "sent": String(sent)])
                        }
                    }
                    if let indicating, handle == indicating, indicate {
                        Task {
                            var confirmed = 0
                            for index in 0..<SampleDevice.indicationCount {
                                let value = [UInt8(truncatingIfNeeded: index), UInt8(truncatingIfNeeded: index >> 8)]
                                guard let reached = try? await engine.updateValue(value, for: indicating, onLinks: [link]),
                                      !reached.isEmpty else { break }
                                confirmed += 1
                            }
                            log?("indications: \(confirmed) confirmed by handle \(link)",
                                 ["event": "indications", "connection": String(link), "confirmed": String(confirmed)])
                        }
                    }
                case .mtuChanged(let mtu):
                    log?("MTU on handle \(e.connection): \(mtu)", ["event": "mtu", "connection": String(e.connection), "mtu": String(mtu)])
                case .indicationConfirmed:
                    break
                }
            }
        })
        let heartRate = await engine.database.valueHandle(of: 0x2A37)
        tasks.append(Task {
            var bpm: UInt8 = 60
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                bpm = bpm >= 99 ? 60 : bpm + 1
                if let heartRate { _ = try? await engine.updateValue([0x00, bpm], for: heartRate) }
            }
        })
    }

    func stop() {
        for t in tasks { t.cancel() }
    }
}

/// The virtual world of `--hci virtual`: a real-time air with sample peripherals advertising on it.
final class SampleWorld: Sendable {
    let air: VirtualAir
    let peripherals: [SamplePeripheral]

    init(air: VirtualAir, peripherals: [SamplePeripheral]) {
        self.air = air
        self.peripherals = peripherals
    }

    static func start() async throws -> SampleWorld {
        let air = VirtualAir(clock: .realTime, seed: 7)
        var peripherals: [SamplePeripheral] = []
        for (i, device) in [SampleDevice.lab, .heartRate].enumerated() {
            let controller = air.addController(.init(position: Position(x: Double(i + 1) * 2), txPower: 4))
            let host = HCIHost(transport: controller.makeHostTransport())
            try await host.powerOn()
            let peripheral = SamplePeripheral(host: host, device: device, name: device.defaultName)
            try await peripheral.start()
            peripherals.append(peripheral)
        }
        return SampleWorld(air: air, peripherals: peripherals)
    }
}

extension SampleDevice: ExpressibleByArgument {}
