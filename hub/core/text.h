// Text helpers for validating untrusted names and quoting them in messages.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace hub {

// Offset of the first byte that breaks UTF-8 (RFC 3629: no overlong forms,
// no surrogates, nothing above U+10FFFF), or std::string_view::npos.
size_t invalid_utf8_at(std::string_view s);

// `s` made safe to print inside a message: bytes outside printable ASCII and
// backslashes become "\xNN"; at most `max_bytes` of input are shown, followed
// by "..." when there was more. A hostile name can then neither forge lines
// nor flood a log.
std::string printable(std::string_view s, size_t max_bytes = 200);

// `text` with the user-information part of every URL in it replaced:
// "https://user:secret@host/x" -> "https://***@host/x". Applied wherever a
// handle or URL may be printed or stored (messages, descriptors, progress),
// so credentials given in a URL never leave the process.
std::string redact_credentials(std::string_view text);

}  // namespace hub
