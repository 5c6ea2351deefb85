import Crypto

extension ChangeTokens {
    /// A key for another use of the server secret (signing asset URLs), derived from it with
    /// HMAC-SHA256 over `purpose`: the secret itself never leaves this type, and a signature
    /// made for one purpose is worthless for another.
    public func derivedKey(for purpose: String) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: Array("nimbus derived key: \(purpose)".utf8), using: SymmetricKey(data: secret)))
    }
}
