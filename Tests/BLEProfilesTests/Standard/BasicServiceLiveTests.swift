import BLE
import BLEProfiles
import BLETestSupport
import Testing

/// Clients against their simulators through the whole stack (HCI over the virtual air).
@Suite(.timeLimit(.minutes(1))) struct BasicServiceLiveTests {
    @Test func batteryLevelsAreReadAndNotifiedAndTheDeviceInformationRead() async throws {
        let link = try await StandardLink.start { manager in
            let battery = await SimulatedBattery(manager: manager, level: 97, floor: 95)
            try await battery.start(tick: .milliseconds(60))
            return battery
        }
        defer { link.air.shutdown() }
        let client = try await BatteryServiceClient(peripheral: link.remote)
        let first = try await client.readLevel()
        #expect((95...100).contains(first.percent))
        // Draining to the floor (95 %) and then recharged to 100 %, six levels a cycle: a notification for each change.
        let levels = try await standardCollect(7, from: try await client.levels()).map(\.percent)
        for (previous, next) in zip(levels, levels.dropFirst()) {
            #expect(next == previous - 1 || (previous == 95 && next == 100), "\(levels)")
        }
        #expect(levels.contains(100) && levels.contains(95), "\(levels)")
        let information = try await DeviceInformationClient(peripheral: link.remote).read()
        #expect(information == DeviceInformation.simulated(model: "Battery-1"))
        #expect(information.manufacturerName == "swift-ble")
        #expect(information.pnpID?.vendorID == 0x05F1)
        await link.simulator.stop()
        withExtendedLifetime(link) {}
    }

    @Test func aMalformedNotificationEndsTheStreamWithItsError() async throws {
        let link = try await StandardLink.start { manager in
            try await manager.add(BatteryService.definition(level: try BatteryLevel(bytes: [50])))
            try await manager.startAdvertising(name: "Broken battery")
            return manager
        }
        defer { link.air.shutdown() }
        let client = try await BatteryServiceClient(peripheral: link.remote)
        #expect(try await client.readLevel().percent == 50)
        let levels = try await client.levels()
        let outcome = Task {
            var seen: [UInt8] = []
            do {
                for try await level in levels { seen.append(level.percent) }
                return (seen, WireError.Code?.none)
            } catch let error as WireError {
                return (seen, error.code)
            } catch {
                return (seen, WireError.Code?.none)
            }
        }
        // A valid level, then 101 %: the stream yields the first and ends with the second's error.
        let manager = link.simulator
        var delivered = false
        for _ in 0..<50 where !delivered {
            delivered = !(try await manager.updateValue([42], for: BatteryService.batteryLevel)).isEmpty
            if !delivered { try await Task.sleep(for: .milliseconds(20)) }
        }
        #expect(delivered)
        try await manager.updateValue([101], for: BatteryService.batteryLevel)
        let (seen, code) = try await withTimeout(5) { await outcome.value }
        #expect(seen == [42])
        #expect(code == .invalidValue)
        await #expect(throws: WireError.self) {
            try await manager.updateValue([0xFF], for: BatteryService.batteryLevel)
            _ = try await client.readLevel()
        }
        withExtendedLifetime(link) {}
    }

    @Test func missingDeviceInformationCharacteristicsAreNil() async throws {
        let link = try await StandardLink.start { manager in
            try await manager.add(DeviceInformationService.definition(DeviceInformation(manufacturerName: "ACME", firmwareRevision: "9.9")))
            try await manager.startAdvertising(name: "DIS only")
            return manager
        }
        defer { link.air.shutdown() }
        let information = try await DeviceInformationClient(peripheral: link.remote).read()
        #expect(information == DeviceInformation(manufacturerName: "ACME", firmwareRevision: "9.9"))
        await #expect(throws: StandardServiceError(.serviceNotFound(BatteryService.uuid))) {
            _ = try await BatteryServiceClient(peripheral: link.remote)
        }
        withExtendedLifetime(link) {}
    }

    @Test func heartRateNotificationsDecodeAndTheControlPointResetsTheEnergy() async throws {
        let link = try await StandardLink.start { manager in
            let monitor = await SimulatedHeartRateMonitor(manager: manager, energyExpended: 250, seed: 3)
            try await monitor.start(tick: .milliseconds(50))
            return monitor
        }
        defer { link.air.shutdown() }
        let client = try await HeartRateClient(peripheral: link.remote)
        #expect(try await client.readBodySensorLocation() == .chest)
        let stream = try await client.measurements()
        let before = try await standardCollect(12, from: stream)
        for measurement in before {
            #expect((50...180).contains(measurement.beatsPerMinute))
            #expect(measurement.sensorContact == .detected)
            // The RR intervals are those of the rate: 60/bpm seconds (±2 % variation, ±1 bpm rounding).
            for interval in measurement.rrIntervals ?? [] {
                let implied = 61_440 / Double(interval)
                #expect(abs(implied - Double(measurement.beatsPerMinute)) <= Double(measurement.beatsPerMinute) * 0.03 + 1, "\(measurement)")
            }
        }
        // About one beat a second at 60+ bpm: the intervals of 12 seconds are 10 or more.
        #expect(before.reduce(0) { $0 + ($1.rrIntervals?.count ?? 0) } >= 10)
        let energies = before.compactMap(\.energyExpended)
        #expect(energies.count == 12)
        #expect(energies == energies.sorted())
        #expect((energies.last ?? 0) > 0)
        // Reset: the simulator's energy drops to 0 before the write is answered, and the next measurements start low.
        try await client.resetEnergyExpended()
        #expect(await link.simulator.resets == 1)
        #expect(await link.simulator.energyExpended < 250)
        // Measurements already on their way (more of them when the machine is busy) may still carry the old energy;
        // then the energy starts again from near 0 and stays low.
        let after = try await standardCollect(12, from: stream, seconds: 15).compactMap(\.energyExpended)
        let restart = after.firstIndex { $0 < 10 }
        #expect(restart != nil && after[(restart ?? 0)...].allSatisfy { $0 < 250 } && (energies.first ?? 0) >= 250, "\(after)")
        // Any other value is refused with 0x80 (Control Point Value Not Supported).
        for value: UInt8 in [0x00, 0x02, 0xFF] {
            await #expect(throws: GATTError.self) { try await client.writeControlPoint(value) }
            do {
                try await client.writeControlPoint(value)
            } catch let error as GATTError {
                guard let code = error.code.attError else { Issue.record("\(error)"); continue }
                #expect(code == HeartRateService.controlPointNotSupported)
                #expect(code.rawValue == 0x80)
            }
        }
        #expect(await link.simulator.resets == 1)
        await link.simulator.stop()
        withExtendedLifetime(link) {}
    }

    @Test func thermometerIndicationsAndIntermediateTemperatures() async throws {
        let link = try await StandardLink.start { manager in
            let thermometer = await SimulatedThermometer(manager: manager, seed: 5)
            try await thermometer.start(tick: .milliseconds(50))
            return thermometer
        }
        defer { link.air.shutdown() }
        let client = try await HealthThermometerClient(peripheral: link.remote)
        #expect(try await client.readTemperatureType() == .tympanum)
        let intermediate = try await client.intermediateTemperatures()
        let measurements = try await standardCollect(3, from: try await client.measurements())
        for measurement in measurements {
            #expect(measurement.unit == .celsius)
            #expect(measurement.temperatureType == .tympanum)
            #expect((36.0...37.6).contains(measurement.celsius))
            #expect(measurement.timestamp?.year == 2026)
        }
        let stamps = measurements.compactMap(\.timestamp).map(\.description)
        #expect(stamps == stamps.sorted() && Set(stamps).count == 3)
        // What was indicated is what the thermometer measured.
        let sent = await link.simulator.measurements
        #expect(measurements.allSatisfy { sent.contains($0) })
        let rising = try await standardCollect(2, from: intermediate)
        #expect(rising.allSatisfy { $0.timestamp == nil && (34.0...37.6).contains($0.celsius) })
        // The measurement interval: 60 s, settable within 3...3600 s, and the time stamps follow it.
        #expect(try await client.readMeasurementInterval() == 60)
        for refused: UInt16 in [1, 3601] {
            await #expect(throws: GATTError.self) { try await client.setMeasurementInterval(refused) }
            do {
                try await client.setMeasurementInterval(refused)
            } catch let error as GATTError {
                guard let code = error.code.attError else { throw error }
                #expect(code == .outOfRange)
            }
        }
        try await client.setMeasurementInterval(120)
        #expect(try await client.readMeasurementInterval() == 120)
        #expect(await link.simulator.measurementInterval == 120)
        let slower = try await standardCollect(3, from: try await client.measurements()).compactMap(\.timestamp)
        #expect(slower.count == 3)
        #expect(slower.count == 3 && slower[2].adding(seconds: -120) == slower[1])
        await link.simulator.stop()
        withExtendedLifetime(link) {}
    }

    @Test func bloodPressureIndicationsAndCuffPressures() async throws {
        let link = try await StandardLink.start { manager in
            let monitor = await SimulatedBloodPressureMonitor(manager: manager, seed: 9)
            try await monitor.start(tick: .milliseconds(40))
            return monitor
        }
        defer { link.air.shutdown() }
        let client = try await BloodPressureClient(peripheral: link.remote)
        #expect(try await client.readFeature() == SimulatedBloodPressureMonitor.features)
        let cuff = try await client.intermediateCuffPressures()
        let results = try await standardCollect(2, from: try await client.measurements())
        for result in results {
            #expect(result.unit == .mmHg)
            #expect((112...128).contains(result.systolic.doubleValue))
            #expect((75...85).contains(result.diastolic.doubleValue))
            #expect(result.meanArterialPressure.doubleValue > result.diastolic.doubleValue)
            #expect(result.meanArterialPressure.doubleValue < result.systolic.doubleValue)
            #expect(result.userID == 1)
            #expect(result.pulseRate != nil && result.timestamp != nil && result.status != nil)
        }
        let sent = await link.simulator.measurements
        #expect(results.allSatisfy { sent.contains($0) })
        let pressures = try await standardCollect(3, from: cuff)
        #expect(pressures.allSatisfy { $0.diastolic == .nan && $0.meanArterialPressure == .nan && (60...180).contains($0.systolic.doubleValue) })
        await link.simulator.stop()
        withExtendedLifetime(link) {}
    }
}

@Suite(.timeLimit(.minutes(1))) struct ScaleLiveTests {
    @Test func weightAndBodyCompositionIndications() async throws {
        let link = try await StandardLink.start { manager in
            let scale = await SimulatedWeightScale(manager: manager, seed: 4)
            try await scale.start(tick: .milliseconds(30))
            return scale
        }
        defer { link.air.shutdown() }
        let weightClient = try await WeightScaleClient(peripheral: link.remote)
        let compositionClient = try await BodyCompositionClient(peripheral: link.remote)
        #expect(try await weightClient.readFeature() == SimulatedWeightScale.weightFeatures)
        #expect(try await compositionClient.readFeature() == SimulatedWeightScale.compositionFeatures)
        let compositionStream = try await compositionClient.measurements()
        let weighings = try await standardCollect(2, from: try await weightClient.measurements())
        let compositions = try await standardCollect(2, from: compositionStream)
        for weighing in weighings {
            #expect((65...80).contains(weighing.weight ?? 0))
            #expect(weighing.userID == 1 && weighing.timestamp != nil)
            #expect(abs((weighing.bmi ?? 0) - (weighing.weight ?? 0) / (1.78 * 1.78)) < 0.06)
        }
        let sentWeighings = await link.simulator.weighings
        let sentCompositions = await link.simulator.compositions
        #expect(weighings.allSatisfy { sentWeighings.contains($0) })
        #expect(compositions.allSatisfy { sentCompositions.contains($0) && (17...19).contains($0.bodyFat) })
        await link.simulator.stop()
        withExtendedLifetime(link) {}
    }
}
