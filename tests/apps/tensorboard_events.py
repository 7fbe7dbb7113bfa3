"""axiom's TensorBoard event files, read back by a reader written here from the published format
(TFRecord framing with masked CRC-32C; the Event, Summary, Value and Image protobuf messages; PNG's
chunks), not by axiom's code: every scalar must equal metrics.jsonl's (as float32), each sample
grid must be a whole PNG of its stated size, a resumed run's file must hold each step once, a
record with a bad CRC must be refused, and so must a file of that name that axiom did not write. Run as: python3 tensorboard_events.py AXIOM"""
import json
import os
import struct
import subprocess
import sys
import tempfile
import zlib


def crc32c(data):
    """CRC-32C (Castagnoli), bit by bit: reflected polynomial 0x82F63B78."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def masked(crc):
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def records(blob):
    at = 0
    while at < len(blob):
        (length,) = struct.unpack_from("<Q", blob, at)
        (length_crc,) = struct.unpack_from("<I", blob, at + 8)
        if masked(crc32c(blob[at:at + 8])) != length_crc:
            raise ValueError(f"bad length CRC at byte {at}")
        data = blob[at + 12:at + 12 + length]
        (data_crc,) = struct.unpack_from("<I", blob, at + 12 + length)
        if masked(crc32c(data)) != data_crc:
            raise ValueError(f"bad data CRC at byte {at}")
        yield data
        at += 16 + length


def fields(message):
    """(field number, value) pairs: ints for varints, bytes for the rest."""
    at = 0
    while at < len(message):
        key, at = varint(message, at)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, at = varint(message, at)
        elif wire == 1:
            value, at = message[at:at + 8], at + 8
        elif wire == 5:
            value, at = message[at:at + 4], at + 4
        elif wire == 2:
            length, at = varint(message, at)
            value, at = message[at:at + length], at + length
        else:
            raise ValueError(f"wire type {wire}")
        yield number, value


def varint(data, at):
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, at


def png_pixels(png, height, width, channels):
    """Checks that `png` is a PNG file of that size (8-bit grey or RGB) whose pixel rows inflate to
    the right length; returns the rows' bytes (each row a filter byte and its pixels)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n", png[:8]
    at, idat, header = 8, b"", None
    while at < len(png):
        (length,) = struct.unpack_from(">I", png, at)
        kind, body = png[at + 4:at + 8], png[at + 8:at + 8 + length]
        assert struct.unpack_from(">I", png, at + 8 + length)[0] == zlib.crc32(kind + body), kind
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        at += 12 + length
    assert header[:4] == (width, height, 8, {1: 0, 3: 2}[channels]), (header, height, width, channels)
    rows = zlib.decompress(idat)
    assert len(rows) == height * (1 + width * channels), (len(rows), height, width)
    return rows


def events(path, images=None):
    """[(step, tag, value)] of the scalar events; checks the first record is the file version.
    Image events are checked as PNG files and appended to `images` as (step, tag, height, width)."""
    out = []
    with open(path, "rb") as f:
        blob = f.read()
    for i, data in enumerate(records(blob)):
        event = dict(fields(data))
        if i == 0:
            assert event[3] == b"brain.Event:2", event
            continue
        struct.unpack("<d", event[1])  # a wall_time
        summary = dict(fields(event[5]))
        value = dict(fields(summary[1]))
        if 4 in value:  # Summary.Image: height 1, width 2, colorspace 3, encoded_image_string 4
            image = dict(fields(value[4]))
            png_pixels(image[4], image[1], image[2], image[3])
            if images is not None:
                images.append((event.get(2, 0), value[1].decode(), image[1], image[2]))
            continue
        out.append((event.get(2, 0), value[1].decode(), struct.unpack("<f", value[2])[0]))
    return out


def encode_varint(value):
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def length_delimited(number, payload):
    return encode_varint(number << 3 | 2) + encode_varint(len(payload)) + payload


def scalar_record(step, tag, value):
    """A TFRecord of one scalar Event, encoded here."""
    summary_value = length_delimited(1, tag.encode()) + encode_varint(2 << 3 | 5) + struct.pack("<f", value)
    event = (encode_varint(1 << 3 | 1) + struct.pack("<d", 0.0) + encode_varint(2 << 3) + encode_varint(step) +
             length_delimited(5, length_delimited(1, summary_value)))
    header = struct.pack("<Q", len(event))
    return (header + struct.pack("<I", masked(crc32c(header))) + event + struct.pack("<I", masked(crc32c(event))))


def float32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def expected_from_metrics(run):
    out = []
    with open(os.path.join(run, "metrics.jsonl")) as f:
        for line in f:
            j = json.loads(line)
            if "train_bits_per_dim" in j:
                out += [(j["step"], "train/bits_per_dim", float32(j["train_bits_per_dim"])),
                        (j["step"], "train/lr", float32(j["lr"])),
                        (j["step"], "train/gradient_norm", float32(j["grad_norm"])),
                        (j["step"], "train/images_per_second", float32(4 / j["seconds"]))]
            if "held_out_bits_per_dim" in j:
                out.append((j["step"], "held_out/bits_per_dim", float32(j["held_out_bits_per_dim"])))
    return out


def train(axiom, run, *flags):
    subprocess.run([axiom, "train", "--config", "tiny", "--out", run, "--batch", "4", "--eval-every", "3",
                    "--eval-images", "8", "--checkpoint-every", "3", *flags],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def main(axiom):
    with tempfile.TemporaryDirectory() as work:
        run = os.path.join(work, "run")
        train(axiom, run, "--steps", "6")
        path = os.path.join(run, "events.out.tfevents.axiom")
        images = []
        got = events(path, images)
        expected = expected_from_metrics(run)
        for (s, t, v), (es, et, ev) in zip(got, expected):
            assert (s, t) == (es, et) and abs(v - ev) <= 1e-6 * max(1, abs(ev)), ((s, t, v), (es, et, ev))
        assert len(got) == len(expected) == 6 * 4 + 2, (len(got), len(expected))
        assert all(v > 0 for _, t, v in got if t == "train/gradient_norm"), got
        # After each evaluation, 8 samples of 28 x 28, 4 to a row with 2 pixels between: 62 x 122.
        assert images == [(3, "samples", 62, 122), (6, "samples", 62, 122)], images

        # A file of that name that axiom did not write is refused, not replaced.
        other = os.path.join(work, "other")
        train(axiom, other, "--steps", "1")
        with open(os.path.join(other, "events.out.tfevents.axiom"), "wb") as f:
            f.write(b"someone else's notes")
        refused = subprocess.run([axiom, "train", "--out", other, "--steps", "2", "--resume"], capture_output=True,
                                 text=True)
        assert refused.returncode != 0 and "is not an event file axiom wrote" in refused.stderr, refused.stderr
        assert open(os.path.join(other, "events.out.tfevents.axiom"), "rb").read() == b"someone else's notes"

        # A record of a step after the checkpoint (what a crash leaves), then a resume: it is dropped,
        # and the file holds each step once, as metrics.jsonl does.
        with open(path, "ab") as f:
            f.write(scalar_record(99, "train/lr", 0.5))
        assert (99, "train/lr", 0.5) in events(path)
        steps_before = [s for s, t, _ in got if t == "train/lr"]
        train(axiom, run, "--steps", "8", "--resume")
        resumed = events(path)
        lr_steps = [s for s, t, _ in resumed if t == "train/lr"]
        assert lr_steps == list(range(1, 9)), lr_steps
        assert steps_before == list(range(1, 7))
        assert [x for x in resumed if x[1] != "train/images_per_second"] == \
               [x for x in expected_from_metrics(run) if x[1] != "train/images_per_second"]

        # A planted bad CRC: one byte of the last record's data changed.
        blob = bytearray(open(path, "rb").read())
        blob[-6] ^= 0xFF
        bad = os.path.join(work, "bad.tfevents")
        open(bad, "wb").write(bytes(blob))
        try:
            events(bad)
        except ValueError as error:
            assert "bad data CRC" in str(error)
        else:
            raise AssertionError("a bad CRC was read")
        print(f"tensorboard: {len(resumed)} scalars read back, equal to metrics.jsonl; {len(images)} sample grids "
              "decoded; a bad CRC and a file axiom did not write refused")


if __name__ == "__main__":
    main(sys.argv[1])
