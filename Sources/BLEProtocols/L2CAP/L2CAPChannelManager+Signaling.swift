import BLEWire

/// The LE signaling channel (CID 0x0005): the peer's requests answered, responses matched to our requests.
/// Core 5.4, Vol 3, Part A, 4.
extension L2CAPChannelManager {
    /// Codes of responses: a malformed one is never answered with Command Reject.
    static let responseCodes: Set<L2CAPSignalingCode> = [
        .commandReject, .disconnectionResponse, .connectionParameterUpdateResponse, .leCreditBasedConnectionResponse,
        .creditBasedConnectionResponse, .creditBasedReconfigureResponse,
    ]

    mutating func receiveSignaling(_ payload: [UInt8]) -> [Action] {
        // Identifier 0 is illegal (Core 5.4, Vol 3, Part A, 4): such a command is dropped, since an answer would
        // have to carry it too. A payload too short for the header cannot be answered either.
        var header = ByteReader(payload)
        guard let code = try? header.readUInt8("code"), let id = try? header.readUInt8("identifier"), id != 0 else {
            droppedFrames += 1
            return []
        }
        let pdu: L2CAPSignalingPDU
        do {
            pdu = try L2CAPSignalingPDU(bytes: payload)
        } catch {
            guard !Self.responseCodes.contains(L2CAPSignalingCode(rawValue: code)) else {
                return malformedResponse(id)
            }
            // A truncated or malformed request: "command not understood" with its identifier. Core 5.4, Vol 3,
            // Part A, 4.1.
            return [signal(.commandReject(identifier: id, reason: .commandNotUnderstood))]
        }
        switch pdu {
        case .unknown(let command):
            // Unknown codes, and BR/EDR-only commands (which LE does not understand).
            return [signal(.commandReject(identifier: command.identifier, reason: .commandNotUnderstood))]
        case .commandReject(let id, let reason):
            return commandRejectReceived(id, reason)
        case .disconnectionRequest(let id, let destination, let source):
            return disconnectionRequestReceived(id, destinationCID: destination, sourceCID: source)
        case .disconnectionResponse(let id, let destination, let source):
            return disconnectionResponseReceived(id, destinationCID: destination, sourceCID: source)
        case .connectionParameterUpdateRequest(let id, let request):
            return parameterUpdateRequestReceived(id, request)
        case .connectionParameterUpdateResponse(let id, let result):
            guard let entry = pending[id], case .parameterUpdate = entry.request else { return [] }
            return finishRequest(id) + [.connectionParameterUpdateFinished(.answered(result))]
        case .leCreditBasedConnectionRequest(let id, let request):
            return leConnectionRequestReceived(id, request)
        case .leCreditBasedConnectionResponse(let id, let response):
            return leConnectionResponseReceived(id, response)
        case .flowControlCredit(_, let cid, let credits):
            return creditsReceived(credits, remoteCID: cid)
        case .creditBasedConnectionRequest(let id, let request):
            return enhancedConnectionRequestReceived(id, request)
        case .creditBasedConnectionResponse(let id, let response):
            return enhancedConnectionResponseReceived(id, response)
        case .creditBasedReconfigureRequest(let id, let request):
            return reconfigureRequestReceived(id, request)
        case .creditBasedReconfigureResponse(let id, let result):
            return reconfigureResponseReceived(id, result)
        }
    }

    /// A response that does not decode: the connection it answers (if any) fails; it is never answered.
    private mutating func malformedResponse(_ id: UInt8) -> [Action] {
        guard let entry = pending[id] else { return [] }
        switch entry.request {
        case .leConnect(let cid): return finishRequest(id) + failConnection([cid], .invalidResponse)
        case .enhancedConnect(let cids): return finishRequest(id) + failConnection(cids, .invalidResponse)
        case .disconnect, .parameterUpdate, .reconfigure: return []
        }
    }

    private mutating func commandRejectReceived(_ id: UInt8, _ reason: L2CAPCommandRejectReason) -> [Action] {
        guard let entry = pending[id] else { return [] }
        let actions = finishRequest(id)
        switch entry.request {
        case .leConnect(let cid):
            return actions + failConnection([cid], .rejected(reason))
        case .enhancedConnect(let cids):
            return actions + failConnection(cids, .rejected(reason))
        case .disconnect(let cid):
            // The peer does not know the channel (any more): it is gone.
            channels[cid] = nil
            return actions
        case .parameterUpdate:
            return actions + [.connectionParameterUpdateFinished(.rejected(reason))]
        case .reconfigure(let cids, _, _):
            return actions + [.reconfigurationFinished(cids.map { L2CAPChannelID(rawValue: $0) }, .rejected(reason))]
        }
    }

    // MARK: Disconnection (Core 5.4, Vol 3, Part A, 4.6 and 4.7)

    private mutating func disconnectionRequestReceived(_ id: UInt8, destinationCID: UInt16, sourceCID: UInt16) -> [Action] {
        guard let channel = channels[destinationCID], channel.state != .connecting else {
            return [signal(.commandReject(identifier: id, reason: .invalidCID(local: destinationCID, remote: sourceCID)))]
        }
        guard channel.remoteCID == sourceCID else {
            // The Source CID does not match the channel's: the request is silently discarded.
            droppedFrames += 1
            return []
        }
        var actions = [signal(.disconnectionResponse(identifier: id, destinationCID: destinationCID, sourceCID: sourceCID))]
        if channel.state == .open {
            actions.append(.channelClosed(L2CAPChannelID(rawValue: destinationCID), .remoteRequest))
        } else if let ours = pending.first(where: { entry in
            if case .disconnect(let cid) = entry.value.request { cid == destinationCID } else { false }
        }) {
            // Both sides disconnected at once: theirs answered, ours no longer waits.
            actions += finishRequest(ours.key)
        }
        channels[destinationCID] = nil
        return actions
    }

    private mutating func disconnectionResponseReceived(_ id: UInt8, destinationCID: UInt16, sourceCID: UInt16) -> [Action] {
        guard let entry = pending[id], case .disconnect(let cid) = entry.request, let channel = channels[cid],
              destinationCID == channel.remoteCID, sourceCID == cid
        else { return [] }
        channels[cid] = nil
        return finishRequest(id)
    }

    // MARK: Connection parameters (Core 5.4, Vol 3, Part A, 4.20 and 4.21)

    private func parameterUpdateRequestReceived(_ id: UInt8, _ request: L2CAPConnectionParameterUpdateRequest) -> [Action] {
        guard role == .central else {
            // Only a central receives this request.
            return [signal(.commandReject(identifier: id, reason: .commandNotUnderstood))]
        }
        guard request.isValid else {
            return [signal(.connectionParameterUpdateResponse(identifier: id, result: .rejected))]
        }
        return [signal(.connectionParameterUpdateResponse(identifier: id, result: .accepted)),
                .updateConnectionParameters(request)]
    }

    // MARK: LE credit based connections (Core 5.4, Vol 3, Part A, 4.22 and 4.23)

    /// Whether a channel (open or closing) already sends to this peer CID.
    private func remoteCIDInUse(_ cid: UInt16) -> Bool {
        channels.values.contains { $0.state != .connecting && $0.remoteCID == cid }
    }

    private mutating func leConnectionRequestReceived(_ id: UInt8, _ request: L2CAPLECreditBasedConnectionRequest) -> [Action] {
        func refuse(_ result: L2CAPCreditBasedConnectionResult) -> [Action] {
            [signal(.leCreditBasedConnectionResponse(identifier: id, .init(destinationCID: 0, mtu: 0, mps: 0,
                                                                        initialCredits: 0, result: result)))]
        }
        // SPSM 0x0027 is Enhanced ATT's, whose bearers are enhanced credit based channels only (Core 5.4, Vol 3,
        // Part G, 5, L2CAP interoperability requirements): an LE credit based channel there is no ATT bearer.
        guard let listener = listeners[request.spsm], request.spsm != .eatt else { return refuse(.spsmNotSupported) }
        if let refusal = linkSecurity.refusal(for: listener.security) { return refuse(refusal) }
        let parameters = listener.parameters
        guard L2CAPChannelID(rawValue: request.sourceCID).isLEDynamic else { return refuse(.invalidSourceCID) }
        guard !remoteCIDInUse(request.sourceCID) else { return refuse(.sourceCIDAlreadyAllocated) }
        guard L2CAPChannelParameters.areValid(mtu: request.mtu, mps: request.mps, enhanced: false) else {
            return refuse(.unacceptableParameters)
        }
        guard let cid = freeLocalCIDs(1).first else { return refuse(.noResourcesAvailable) }
        var channel = L2CAPCreditBasedChannel(state: .connecting, localCID: cid, spsm: request.spsm, isEnhanced: false,
                                              initiatedLocally: false, local: parameters,
                                              returnsCreditsOnConsumption: configuration.creditReturn == .onConsumption)
        channel.open(remoteCID: request.sourceCID, peerMTU: request.mtu, peerMPS: request.mps,
                     peerInitialCredits: request.initialCredits)
        channels[cid] = channel
        let response = L2CAPLECreditBasedConnectionResponse(destinationCID: cid, mtu: parameters.mtu, mps: parameters.mps,
                                                            initialCredits: parameters.initialCredits, result: .success)
        return [signal(.leCreditBasedConnectionResponse(identifier: id, response)), .channelOpened(channel.info)]
    }

    private mutating func leConnectionResponseReceived(_ id: UInt8, _ response: L2CAPLECreditBasedConnectionResponse) -> [Action] {
        guard let entry = pending[id], case .leConnect(let cid) = entry.request else { return [] }
        let actions = finishRequest(id)
        guard response.result == .success else { return actions + failConnection([cid], .refused(response.result)) }
        guard var channel = channels[cid], channel.state == .connecting,
              L2CAPChannelID(rawValue: response.destinationCID).isLEDynamic, !remoteCIDInUse(response.destinationCID),
              L2CAPChannelParameters.areValid(mtu: response.mtu, mps: response.mps, enhanced: false)
        else { return actions + failConnection([cid], .invalidResponse) }
        channel.open(remoteCID: response.destinationCID, peerMTU: response.mtu, peerMPS: response.mps,
                     peerInitialCredits: response.initialCredits)
        channels[cid] = channel
        return actions + [.channelOpened(channel.info)]
    }

    // MARK: Flow control credit (Core 5.4, Vol 3, Part A, 4.24)

    /// `remoteCID` is the sender's Source CID: the channel we send to. Unknown CIDs are ignored.
    private mutating func creditsReceived(_ credits: UInt16, remoteCID: UInt16) -> [Action] {
        guard let local = channels.first(where: { $0.value.state == .open && $0.value.remoteCID == remoteCID })?.key,
              var channel = channels[local]
        else { return [] }
        guard channel.addSendCredits(credits) else { return closeForViolation(local, .creditOverflow) }
        let wasWaiting = channel.queuedFrameCount > 0
        let frames = channel.takeSendable()
        channels[local] = channel
        var actions: [Action] = frames.map {
            .send(L2CAPBasicFrame(channelID: L2CAPChannelID(rawValue: channel.remoteCID), payload: $0))
        }
        if wasWaiting, channel.queuedFrameCount == 0 { actions.append(.readyToSend(L2CAPChannelID(rawValue: local))) }
        return actions
    }

    // MARK: Enhanced credit based connections (Core 5.4, Vol 3, Part A, 4.25 and 4.26)

    private mutating func enhancedConnectionRequestReceived(_ id: UInt8, _ request: L2CAPCreditBasedConnectionRequest) -> [Action] {
        // A refusal of all channels names as many (zero) Destination CIDs as the request had Source CIDs.
        func refuseAll(_ result: L2CAPCreditBasedConnectionResult) -> [Action] {
            [signal(.creditBasedConnectionResponse(identifier: id, .init(
                mtu: 0, mps: 0, initialCredits: 0, result: result,
                destinationCIDs: Array(repeating: 0, count: request.sourceCIDs.count))))]
        }
        guard (1...L2CAPCreditBasedConnectionRequest.maximumChannelCount).contains(request.sourceCIDs.count) else {
            return refuseAll(.invalidParameters)
        }
        guard let listener = listeners[request.spsm] else { return refuseAll(.spsmNotSupported) }
        if let refusal = linkSecurity.refusal(for: listener.security) { return refuseAll(refusal) }
        let parameters = listener.parameters
        guard L2CAPChannelParameters.areValid(mtu: request.mtu, mps: request.mps, enhanced: true) else {
            return refuseAll(.invalidParameters)
        }
        // A listener announcing less than the enhanced minimum cannot take enhanced channels.
        guard L2CAPChannelParameters.areValid(mtu: parameters.mtu, mps: parameters.mps, enhanced: true) else {
            return refuseAll(.noResourcesAvailable)
        }
        var destinations: [UInt16] = []
        var result = L2CAPCreditBasedConnectionResult.success
        var opened: [Action] = []
        for source in request.sourceCIDs {
            let refusal: L2CAPCreditBasedConnectionResult
            if !L2CAPChannelID(rawValue: source).isLEDynamic {
                refusal = .invalidSourceCID
            } else if remoteCIDInUse(source) {
                refusal = .sourceCIDAlreadyAllocated
            } else if let cid = freeLocalCIDs(1).first {
                var channel = L2CAPCreditBasedChannel(state: .connecting, localCID: cid, spsm: request.spsm,
                                                      isEnhanced: true, initiatedLocally: false, local: parameters,
                                                      returnsCreditsOnConsumption: configuration.creditReturn == .onConsumption)
                channel.open(remoteCID: source, peerMTU: request.mtu, peerMPS: request.mps,
                             peerInitialCredits: request.initialCredits)
                channels[cid] = channel
                destinations.append(cid)
                opened.append(.channelOpened(channel.info))
                continue
            } else {
                refusal = .noResourcesAvailable
            }
            destinations.append(0)
            if result == .success { result = refusal }
        }
        let response = L2CAPCreditBasedConnectionResponse(mtu: parameters.mtu, mps: parameters.mps,
                                                          initialCredits: parameters.initialCredits, result: result,
                                                          destinationCIDs: destinations)
        return [signal(.creditBasedConnectionResponse(identifier: id, response))] + opened
    }

    private mutating func enhancedConnectionResponseReceived(_ id: UInt8, _ response: L2CAPCreditBasedConnectionResponse) -> [Action] {
        guard let entry = pending[id], case .enhancedConnect(let cids) = entry.request else { return [] }
        // A pending result announces the final response: the RTX timer gives way to the longer ERTX. Core 5.4, Vol 3,
        // Part A, 4.26 and 6.2.2.
        guard !response.result.isPending else {
            return finishRequest(id) + startRequest(id, entry.request, duration: configuration.extendedSignalingTimeout)
        }
        var actions = finishRequest(id)
        let parametersValid = L2CAPChannelParameters.areValid(mtu: response.mtu, mps: response.mps, enhanced: true)
        for (index, cid) in cids.enumerated() {
            let destination = response.destinationCIDs.indices.contains(index) ? response.destinationCIDs[index] : 0
            guard destination != 0 else {
                let failure: L2CAPConnectionFailure = response.result == .success ? .invalidResponse : .refused(response.result)
                actions += failConnection([cid], failure)
                continue
            }
            guard var channel = channels[cid], channel.state == .connecting, parametersValid,
                  L2CAPChannelID(rawValue: destination).isLEDynamic, !remoteCIDInUse(destination)
            else {
                actions += failConnection([cid], .invalidResponse)
                continue
            }
            channel.open(remoteCID: destination, peerMTU: response.mtu, peerMPS: response.mps,
                         peerInitialCredits: response.initialCredits)
            channels[cid] = channel
            actions.append(.channelOpened(channel.info))
        }
        return actions
    }

    // MARK: Reconfiguration (Core 5.4, Vol 3, Part A, 4.27 and 4.28)

    /// The peer announces a new receive MTU and MPS for some of its enhanced channels (named by its own CIDs).
    private mutating func reconfigureRequestReceived(_ id: UInt8, _ request: L2CAPCreditBasedReconfigureRequest) -> [Action] {
        func answer(_ result: L2CAPCreditBasedReconfigureResult) -> [Action] {
            [signal(.creditBasedReconfigureResponse(identifier: id, result: result))]
        }
        guard (1...L2CAPCreditBasedConnectionRequest.maximumChannelCount).contains(request.destinationCIDs.count),
              L2CAPChannelParameters.areValid(mtu: request.mtu, mps: request.mps, enhanced: true)
        else { return answer(.unacceptableParameters) }
        var locals: [UInt16] = []
        for remote in request.destinationCIDs {
            guard let local = channels.first(where: {
                $0.value.state == .open && $0.value.isEnhanced && $0.value.remoteCID == remote
            })?.key else { return answer(.invalidDestinationCID) }
            locals.append(local)
        }
        let current = locals.compactMap { channels[$0] }
        guard !current.contains(where: { request.mtu < $0.peerMTU }) else { return answer(.mtuReductionNotAllowed) }
        guard current.count == 1 || !current.contains(where: { request.mps < $0.peerMPS }) else {
            return answer(.mpsReductionNotAllowed)
        }
        // K-frames already queued keep their size; SDUs sent from now on are segmented to the new MPS.
        for local in locals {
            channels[local]?.peerMTU = request.mtu
            channels[local]?.peerMPS = request.mps
        }
        return answer(.success)
    }

    /// The answer to our reconfiguration: on success the channels (those still open) accept the new sizes.
    private mutating func reconfigureResponseReceived(_ id: UInt8, _ result: L2CAPCreditBasedReconfigureResult) -> [Action] {
        guard let entry = pending[id], case .reconfigure(let cids, let mtu, let mps) = entry.request else { return [] }
        if result == .success {
            for cid in cids where channels[cid]?.state == .open {
                channels[cid]?.local.mtu = mtu
                channels[cid]?.local.mps = mps
            }
        }
        return finishRequest(id) + [.reconfigurationFinished(cids.map { L2CAPChannelID(rawValue: $0) }, .answered(result))]
    }
}
