import CoreBluetoothCompat
import Foundation
import Testing

/// A peripheral that publishes an L2CAP channel and a characteristic taking writes without response, as an iOS app
/// does: it echoes each line received on a channel back in capitals and counts the writes.
final class EchoPeripheral: NSObject, CBPeripheralManagerDelegate, StreamDelegate {
    static let serviceUUID = CBUUID(string: "5E1F0000-0000-4000-8000-00000000E0C0")
    static let sinkUUID = CBUUID(string: "5E1F0001-0000-4000-8000-00000000E0C0")
    var manager: CBPeripheralManager!
    var channels: [CBL2CAPChannel] = []
    var writes = 0
    let name: String
    let log: AsyncStream<String>.Continuation

    init(name: String, queue: DispatchQueue, log: AsyncStream<String>.Continuation) {
        self.name = name
        self.log = log
        super.init()
        manager = CBPeripheralManager(delegate: self, queue: queue, options: nil)
    }

    func peripheralManagerDidUpdateState(_ peripheral: CBPeripheralManager) {
        guard peripheral.state == .poweredOn else { return }
        let sink = CBMutableCharacteristic(type: Self.sinkUUID, properties: [.writeWithoutResponse], value: nil, permissions: [.writeable])
        let service = CBMutableService(type: Self.serviceUUID, primary: true)
        service.characteristics = [sink]
        peripheral.add(service)
        peripheral.publishL2CAPChannel(withEncryption: false)
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, didPublishL2CAPChannel PSM: CBL2CAPPSM, error: Error?) {
        log.yield("published \(PSM)")
        peripheral.startAdvertising([CBAdvertisementDataLocalNameKey: name, CBAdvertisementDataServiceUUIDsKey: [Self.serviceUUID]])
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, didOpen channel: CBL2CAPChannel?, error: Error?) {
        guard let channel else { return }
        log.yield("peripheral opened \(channel.psm) peer is central \(channel.peer is CBCentral)")
        channels.append(channel)
        channel.inputStream.delegate = self
        channel.outputStream.delegate = self
        channel.inputStream.schedule(in: .current, forMode: .default)
        channel.outputStream.schedule(in: .current, forMode: .default)
        channel.inputStream.open()
        channel.outputStream.open()
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, didReceiveWrite requests: [CBATTRequest]) {
        writes += requests.count
        if writes == ChannelCentral.writeCount { log.yield("peripheral got \(writes) writes") }
    }

    func stream(_ aStream: Stream, handle eventCode: Stream.Event) {
        guard eventCode == .hasBytesAvailable, let input = aStream as? InputStream,
              let channel = channels.first(where: { $0.inputStream === input }) else { return }
        var buffer = [UInt8](repeating: 0, count: 512)
        let count = input.read(&buffer, maxLength: buffer.count)
        guard count > 0 else { return }
        let reply = Array(String(decoding: buffer[0..<count], as: UTF8.self).uppercased().utf8)
        _ = channel.outputStream.write(reply, maxLength: reply.count)
    }
}

/// A central that connects, floods writes without response while `canSendWriteWithoutResponse` allows and resumes
/// on `peripheralIsReady`, then opens the channel and exchanges a line.
final class ChannelCentral: NSObject, CBCentralManagerDelegate, CBPeripheralDelegate, StreamDelegate {
    static let writeCount = 40
    var manager: CBCentralManager!
    var peripheral: CBPeripheral?
    var sink: CBCharacteristic?
    var sent = 0
    var blockedAt: Int?
    var readyCallbacks = 0
    var channel: CBL2CAPChannel?
    let psm: CBL2CAPPSM
    let name: String
    let log: AsyncStream<String>.Continuation

    init(psm: CBL2CAPPSM, name: String, queue: DispatchQueue, log: AsyncStream<String>.Continuation) {
        self.psm = psm
        self.name = name
        self.log = log
        super.init()
        manager = CBCentralManager(delegate: self, queue: queue)
    }

    func centralManagerDidUpdateState(_ central: CBCentralManager) {
        if central.state == .poweredOn { central.scanForPeripherals(withServices: [EchoPeripheral.serviceUUID]) }
    }

    func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral, advertisementData: [String: Any], rssi RSSI: NSNumber) {
        guard self.peripheral == nil, advertisementData[CBAdvertisementDataLocalNameKey] as? String == name else { return }
        self.peripheral = peripheral
        central.stopScan()
        central.connect(peripheral)
    }

    func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        peripheral.delegate = self
        peripheral.discoverServices([EchoPeripheral.serviceUUID])
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: Error?) {
        guard let service = peripheral.services?.first else { return }
        peripheral.discoverCharacteristics([EchoPeripheral.sinkUUID], for: service)
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: Error?) {
        sink = service.characteristics?.first
        log.yield("can send \(peripheral.canSendWriteWithoutResponse)")
        sendWrites()
    }

    func sendWrites() {
        guard let peripheral, let sink, sent < Self.writeCount else { return }
        while sent < Self.writeCount {
            guard peripheral.canSendWriteWithoutResponse else {
                if blockedAt == nil { blockedAt = sent }
                return
            }
            peripheral.writeValue(Data([UInt8(truncatingIfNeeded: sent)]), for: sink, type: .withoutResponse)
            sent += 1
        }
        log.yield("sent \(sent) blocked at \(blockedAt.map(String.init) ?? "never") ready \(readyCallbacks > 0)")
        peripheral.openL2CAPChannel(psm)
    }

    func peripheralIsReady(toSendWriteWithoutResponse peripheral: CBPeripheral) {
        readyCallbacks += 1
        sendWrites()
    }

    func peripheral(_ peripheral: CBPeripheral, didOpen channel: CBL2CAPChannel?, error: Error?) {
        guard let channel else {
            log.yield("open failed \(String(describing: error))")
            return
        }
        log.yield("central opened \(channel.psm) peer is peripheral \(channel.peer === peripheral)")
        self.channel = channel
        channel.inputStream.delegate = self
        channel.outputStream.delegate = self
        channel.inputStream.open()
        channel.outputStream.open()
        let line = Array("hello over l2cap".utf8)
        log.yield("wrote \(channel.outputStream.write(line, maxLength: line.count))")
    }

    func stream(_ aStream: Stream, handle eventCode: Stream.Event) {
        guard eventCode == .hasBytesAvailable, let input = aStream as? InputStream else { return }
        var buffer = [UInt8](repeating: 0, count: 512)
        let count = input.read(&buffer, maxLength: buffer.count)
        guard count > 0 else { return }
        log.yield("reply \(String(decoding: buffer[0..<count], as: UTF8.self))")
        channel?.inputStream.close()
        channel?.outputStream.close()
    }
}

@Suite struct ChannelAndFlowControlTests {
    @Test func writesWithoutResponseAreFlowControlledAndAChannelCarriesStreams() async throws {
        let queue = DispatchQueue(label: "channel tutorial")
        let (peripheralStream, peripheralLog) = AsyncStream.makeStream(of: String.self)
        let (centralStream, centralLog) = AsyncStream.makeStream(of: String.self)
        let peripheralLines = LineQueue(peripheralStream)
        let centralLines = LineQueue(centralStream)
        let name = "Echo \(UInt16.random(in: 1000...9999))"
        let peripheral = EchoPeripheral(name: name, queue: queue, log: peripheralLog)
        let published = try #require(await peripheralLines.next())
        #expect(published.hasPrefix("published "))
        let psm = try #require(CBL2CAPPSM(published.dropFirst("published ".count)))
        #expect((0x80...0xFF).contains(psm))
        let central = queue.sync { ChannelCentral(psm: psm, name: name, queue: queue, log: centralLog) }   // made on its queue, as callbacks could otherwise come first
        #expect(await centralLines.next() == "can send true")
        // Within one callback nothing completes, so the queue's capacity is where writing must stop.
        #expect(await centralLines.next() == "sent \(ChannelCentral.writeCount) blocked at \(CBPeripheral.writeWithoutResponseQueueCapacity) ready true")
        #expect(await centralLines.next() == "central opened \(psm) peer is peripheral true")
        // The writes and the channel reach the peripheral on separate paths: either may be reported first.
        let peripheralSaw = Set([await peripheralLines.next(), await peripheralLines.next()])
        #expect(peripheralSaw == ["peripheral got \(ChannelCentral.writeCount) writes", "peripheral opened \(psm) peer is central true"])
        #expect(await centralLines.next() == "wrote 16")
        #expect(await centralLines.next() == "reply HELLO OVER L2CAP")
        withExtendedLifetime((peripheral, central)) {}
    }
}
