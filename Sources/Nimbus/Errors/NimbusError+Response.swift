import NimbusProtocol

extension NimbusError {
    /// A response that parsed as JSON but not as the CloudKit shape the SDK expected.
    static func malformedResponse(_ detail: String) -> NimbusError {
        NimbusError(.serverRejectedRequest, "the server's response is not a CloudKit Web Services response: \(detail)")
    }
}
