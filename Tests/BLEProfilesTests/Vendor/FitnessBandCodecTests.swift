import BLEProfiles
import Testing

@Suite struct FitnessBandCodecTests {
    @Test func stepsAreFourBytesLittleEndian() throws {
        #expect(FitnessBandSteps(0x0102_0304).encoded == [0x04, 0x03, 0x02, 0x01])
        #expect(try FitnessBandSteps(bytes: [0x10, 0x27, 0x00, 0x00]).count == 10_000)
        #expect(try FitnessBandSteps(bytes: [0xFF, 0xFF, 0xFF, 0xFF]).count == UInt32.max)
        for length in 0..<4 { #expect(throws: WireError.self) { try FitnessBandSteps(bytes: Array(repeating: 1, count: length)) } }
        #expect(throws: WireError.self) { try FitnessBandSteps(bytes: [1, 2, 3, 4, 5]) }
    }

    @Test func deviceInfoIsSixteenBytes() throws {
        let info = FitnessBandDeviceInfo(deviceID: [1, 2, 3, 4, 5, 6, 7, 8], profileVersion: 0x0100_0000, firmwareVersion: 0x0102_0304)
        let bytes: [UInt8] = [1, 2, 3, 4, 5, 6, 7, 8, 0x00, 0x00, 0x00, 0x01, 0x04, 0x03, 0x02, 0x01]
        #expect(info.encoded == bytes)
        #expect(try FitnessBandDeviceInfo(bytes: bytes) == info)
        #expect(FitnessBandDeviceInfo.versionText(info.firmwareVersion) == "1.2.3.4")
        #expect(FitnessBandDeviceInfo(deviceID: [9], profileVersion: 0, firmwareVersion: 0).deviceID == [9, 0, 0, 0, 0, 0, 0, 0])
        for length in 0..<16 { #expect(throws: WireError.self) { try FitnessBandDeviceInfo(bytes: Array(bytes.prefix(length))) } }
        #expect(throws: WireError.self) { try FitnessBandDeviceInfo(bytes: bytes + [0]) }
    }

    @Test func batteryIsTenBytesWithEveryState() throws {
        let stamp = FitnessBandBattery.Timestamp(year: 2026, month: 11, day: 22, hour: 20, minute: 15, second: 7)
        let states: [(FitnessBandBattery.State, UInt8)] = [(.low, 1), (.charging, 2), (.full, 3), (.notCharging, 4), (.other(9), 9), (.other(0), 0)]
        for (state, byte) in states {
            let battery = FitnessBandBattery(percent: 87, lastCharged: stamp, chargeCycles: 0x0102, state: state)
            let bytes: [UInt8] = [87, 26, 11, 22, 20, 15, 7, 0x02, 0x01, byte]
            #expect(battery.encoded == bytes)
            #expect(try FitnessBandBattery(bytes: bytes) == battery)
        }
        let good: [UInt8] = [87, 26, 11, 22, 20, 15, 7, 0x02, 0x01, 4]
        for length in 0..<10 { #expect(throws: WireError.self) { try FitnessBandBattery(bytes: Array(good.prefix(length))) } }
        #expect(throws: WireError.self) { try FitnessBandBattery(bytes: good + [0]) }
        for (index, bad) in [(0, UInt8(101)), (2, 0), (2, 13), (3, 0), (3, 32), (4, 24), (5, 60), (6, 60)] {
            var bytes = good
            bytes[index] = bad
            #expect(throws: WireError.self, "byte \(index) = \(bad)") { try FitnessBandBattery(bytes: bytes) }
        }
    }

    @Test func alertLevelsAndShake() throws {
        let cases: [(FitnessBandAlert, [UInt8], Bool)] = [(.stop, [0], false), (.mild, [1], true), (.high, [2], true), (.shake, Array("SHAKE".utf8), true)]
        for (alert, bytes, vibrates) in cases {
            #expect(alert.bytes == bytes)
            #expect(try FitnessBandAlert(bytes: bytes) == alert)
            #expect(alert.vibrates == vibrates)
        }
        for bad: [UInt8] in [[], [3], [0xFF], [2, 0], Array("shake".utf8), Array("SHAK".utf8)] {
            #expect(throws: WireError.self) { try FitnessBandAlert(bytes: bad) }
        }
    }
}
