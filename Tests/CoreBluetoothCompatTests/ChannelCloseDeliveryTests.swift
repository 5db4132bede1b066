import CoreBluetoothCompat
import Foundation
import Testing

/// A peripheral that publishes a channel and counts what arrives on it until the channel closes.
final class CountingPeripheral: NSObject, CBPeripheralManagerDelegate, StreamDelegate {
    static let serviceUUID = CBUUID(string: "5E1F0000-0000-4000-8000-00000000C105")
    var manager: CBPeripheralManager!
    var channel: CBL2CAPChannel?
    var received: [UInt8] = []
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
        peripheral.publishL2CAPChannel(withEncryption: false)
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, didPublishL2CAPChannel PSM: CBL2CAPPSM, error: Error?) {
        log.yield("published \(PSM)")
        peripheral.startAdvertising([CBAdvertisementDataLocalNameKey: name, CBAdvertisementDataServiceUUIDsKey: [Self.serviceUUID]])
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, didOpen channel: CBL2CAPChannel?, error: Error?) {
        guard let channel else { return }
        self.channel = channel
        channel.inputStream.delegate = self
        channel.inputStream.open()
    }

    func stream(_ aStream: Stream, handle eventCode: Stream.Event) {
        guard let input = aStream as? InputStream else { return }
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = input.read(&buffer, maxLength: buffer.count)
            guard count > 0 else { break }
            received += buffer[0..<count]
        }
        if eventCode == .endEncountered { log.yield("received \(received.count) identical \(received == ChannelCloseDeliveryTests.data)") }
    }
}

/// A central that opens the channel, writes everything through the output stream, closes both streams and drops the
/// link at once.
final class StreamingCentral: NSObject, CBCentralManagerDelegate, CBPeripheralDelegate, StreamDelegate {
    var manager: CBCentralManager!
    var peripheral: CBPeripheral?
    var channel: CBL2CAPChannel?
    var written = 0
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
        if central.state == .poweredOn { central.scanForPeripherals(withServices: [CountingPeripheral.serviceUUID]) }
    }

    func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral, advertisementData: [String: Any], rssi RSSI: NSNumber) {
        guard self.peripheral == nil, advertisementData[CBAdvertisementDataLocalNameKey] as? String == name else { return }
        self.peripheral = peripheral
        central.stopScan()
        central.connect(peripheral)
    }

    func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        peripheral.delegate = self
        peripheral.openL2CAPChannel(psm)
    }

    func peripheral(_ peripheral: CBPeripheral, didOpen channel: CBL2CAPChannel?, error: Error?) {
        guard let channel else {
            log.yield("open failed \(String(describing: error))")
            return
        }
        self.channel = channel
        channel.outputStream.delegate = self
        channel.outputStream.open()
    }

    func stream(_ aStream: Stream, handle eventCode: Stream.Event) {
        guard eventCode == .hasSpaceAvailable, let output = aStream as? OutputStream, let channel, let peripheral else { return }
        let data = ChannelCloseDeliveryTests.data
        while written < data.count {
            let count = data[written...].withUnsafeBufferPointer { bytes in
                bytes.baseAddress.map { output.write($0, maxLength: bytes.count) } ?? 0
            }
            guard count > 0 else { return }   // no space: hasSpaceAvailable comes back
            written += count
        }
        // Everything written: close the channel and drop the link without waiting for anything.
        channel.outputStream.close()
        channel.inputStream.close()
        manager.cancelPeripheralConnection(peripheral)
        log.yield("wrote \(written)")
    }
}

/// Bytes written to a `CBL2CAPChannel`'s output stream, then the streams closed and the link dropped at once, all reach
/// the peer (issue 23, item 3).
@Suite(.timeLimit(.minutes(1))) struct ChannelCloseDeliveryTests {
    static let data: [UInt8] = (0..<(96 << 10)).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ $0 >> 10) }

    @Test func bytesWrittenBeforeTheStreamsCloseAndTheLinkDropsAreAllDelivered() async throws {
        let queue = DispatchQueue(label: "channel close delivery")
        let (peripheralStream, peripheralLog) = AsyncStream.makeStream(of: String.self)
        let (centralStream, centralLog) = AsyncStream.makeStream(of: String.self)
        let peripheralLines = LineQueue(peripheralStream)
        let centralLines = LineQueue(centralStream)
        let name = "Count \(UInt16.random(in: 1000...9999))"
        let peripheral = CountingPeripheral(name: name, queue: queue, log: peripheralLog)
        let published = try #require(await peripheralLines.next())
        let psm = try #require(CBL2CAPPSM(published.dropFirst("published ".count)))
        let central = queue.sync { StreamingCentral(psm: psm, name: name, queue: queue, log: centralLog) }
        #expect(await centralLines.next() == "wrote \(Self.data.count)")
        #expect(await peripheralLines.next() == "received \(Self.data.count) identical true")
        withExtendedLifetime((peripheral, central)) {}
    }
}
