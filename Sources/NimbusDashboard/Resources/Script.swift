import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NimbusProtocol
import NimbusServer
import NimbusStore
import NIOCore

/// The dashboard's plain JavaScript: the live page's event stream, copy buttons, asset
/// previews that hide when the bytes are not an image, and confirmations. Pages work
/// without it but for the live numbers.
enum Script {
    static let text = """
        "use strict";
        document.addEventListener("DOMContentLoaded", function () {
          document.querySelectorAll("img.asset-preview").forEach(function (img) {
            img.addEventListener("error", function () { img.remove(); });
          });
          document.querySelectorAll("form[data-confirm]").forEach(function (form) {
            form.addEventListener("submit", function (event) {
              if (!window.confirm(form.getAttribute("data-confirm"))) { event.preventDefault(); }
            });
          });
          document.querySelectorAll("button[data-copy]").forEach(function (button) {
            button.addEventListener("click", function () {
              var target = document.getElementById(button.getAttribute("data-copy"));
              if (!target || !navigator.clipboard) { return; }
              navigator.clipboard.writeText(target.textContent).then(function () { button.textContent = "Copied"; });
            });
          });
          var live = document.getElementById("live");
          if (live && window.EventSource) {
            var source = new EventSource("/dashboard/live/events");
            source.addEventListener("stats", function (event) {
              var data = JSON.parse(event.data);
              Object.keys(data.numbers).forEach(function (key) {
                var cell = document.querySelector("[data-live='" + key + "']");
                if (cell) { cell.textContent = data.numbers[key]; }
              });
              fillRows("live-operations", data.operations);
              fillRows("live-statuses", data.statuses);
              fillRows("live-notifications", data.notifications);
              fillRows("live-errors", data.errorCodes);
              var log = document.getElementById("live-log");
              if (log) { log.textContent = data.log; }
            });
          }
          function fillRows(id, rows) {
            var body = document.getElementById(id);
            if (!body) { return; }
            while (body.firstChild) { body.removeChild(body.firstChild); }
            rows.forEach(function (row) {
              var tr = document.createElement("tr");
              row.forEach(function (value) {
                var td = document.createElement("td");
                td.textContent = value;
                tr.appendChild(td);
              });
              body.appendChild(tr);
            });
          }
        });
        """
}

/// Responses for the stylesheet and the script.
enum StaticFiles {
    static func response(_ text: String, type: String) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = type + "; charset=utf-8"
        headers[.cacheControl] = "no-cache"
        headers[HTTPField.Name("X-Content-Type-Options")!] = "nosniff"
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }
}
