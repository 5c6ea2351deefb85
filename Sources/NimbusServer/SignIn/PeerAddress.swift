/// The IP address of the client a request came from, as the socket says (never a header a
/// client could forge): bound by the HTTP channel around the requests of each connection,
/// read by sign-in throttling.
package enum PeerAddress {
    @TaskLocal package static var current: String?
}
