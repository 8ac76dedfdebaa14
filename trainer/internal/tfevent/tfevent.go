// Package tfevent writes and reads TensorBoard event files: TFRecord framing (a little-endian
// uint64 length, the masked CRC-32C of the length, the data, the masked CRC-32C of the data)
// around tensorboard.Event protocol buffers, encoded by hand with protowire from the field
// numbers of TensorBoard's event.proto, summary.proto and tensor.proto.
package tfevent

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/goaccel/goaccel/internal/pbwire"
)

// FileVersion is the file_version of the first event of every file TensorBoard reads.
const FileVersion = "brain.Event:2"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// MaskedCRC is TFRecord's checksum of b: the CRC-32C rotated right by 15 bits plus a constant.
func MaskedCRC(b []byte) uint32 {
	c := crc32.Checksum(b, castagnoli)
	return (c>>15 | c<<17) + 0xa282ead8
}

// Frame returns data framed as one TFRecord.
func Frame(data []byte) []byte {
	out := make([]byte, 12, 16+len(data))
	binary.LittleEndian.PutUint64(out, uint64(len(data)))
	binary.LittleEndian.PutUint32(out[8:], MaskedCRC(out[:8]))
	out = append(out, data...)
	return binary.LittleEndian.AppendUint32(out, MaskedCRC(data))
}

// ErrCorrupt is returned by Split for a record that fails its checksum with more data after it
// (a torn write leaves only the last record incomplete).
var ErrCorrupt = errors.New("corrupt record")

// Split cuts raw into its records' data. A last record that is incomplete or fails its data
// checksum is what a write interrupted by a crash leaves: Split stops before it and returns
// the length of the intact part (end < len(raw)). A record that fails a checksum elsewhere
// is ErrCorrupt, with end at its start.
func Split(raw []byte) (records [][]byte, end int, err error) {
	for end < len(raw) {
		rest := raw[end:]
		if len(rest) < 12 {
			return records, end, nil
		}
		if binary.LittleEndian.Uint32(rest[8:]) != MaskedCRC(rest[:8]) {
			return records, end, fmt.Errorf("%w: the length checksum of the record at byte %d", ErrCorrupt, end)
		}
		n := binary.LittleEndian.Uint64(rest)
		if len(rest) < 16 || n > uint64(len(rest)-16) {
			return records, end, nil
		}
		data := rest[12 : 12+n]
		if binary.LittleEndian.Uint32(rest[12+n:]) != MaskedCRC(data) {
			if int(16+n) == len(rest) {
				return records, end, nil
			}
			return records, end, fmt.Errorf("%w: the data checksum of the record at byte %d", ErrCorrupt, end)
		}
		records = append(records, data)
		end += int(16 + n)
	}
	return records, end, nil
}

// Field numbers of the protocol buffers (TensorBoard's compat/proto).
const (
	eventWallTime    = 1 // double
	eventStep        = 2 // int64
	eventFileVersion = 3 // string
	eventSummary     = 5 // Summary

	summaryValue = 1 // repeated Value

	valueTag         = 1 // string
	valueSimpleValue = 2 // float
	valueTensor      = 8 // TensorProto
	valueMetadata    = 9 // SummaryMetadata

	metadataPluginData = 1 // PluginData
	metadataDataClass  = 4 // enum DataClass
	pluginName         = 1 // string

	tensorDType    = 1 // enum DataType
	tensorShape    = 2 // TensorShapeProto (empty: a scalar)
	tensorStrings  = 8 // repeated bytes
	dtString       = 7 // DT_STRING
	dataClassValue = 2 // DATA_CLASS_TENSOR
)

// Event is the part of a tensorboard.Event that this package writes and reads back.
type Event struct {
	WallTime float64
	Step     int64
	// FileVersion is set on the first event of a file only.
	FileVersion string
	// Scalars are summary values with simple_value (float32 in the file), in order.
	Scalars []Scalar
	// Texts are text-plugin summaries: a scalar string tensor.
	Texts []Text
}

// Scalar is one named number.
type Scalar struct {
	Tag   string
	Value float32
}

// Text is one named string, shown by TensorBoard's text plugin (Markdown).
type Text struct {
	Tag, Text string
}

// Marshal encodes e as a tensorboard.Event.
func (e Event) Marshal() []byte {
	var b []byte
	b = protowire.AppendTag(b, eventWallTime, protowire.Fixed64Type)
	b = protowire.AppendFixed64(b, math.Float64bits(e.WallTime))
	if e.Step != 0 {
		b = protowire.AppendTag(b, eventStep, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(e.Step))
	}
	if e.FileVersion != "" {
		b = protowire.AppendTag(b, eventFileVersion, protowire.BytesType)
		b = protowire.AppendString(b, e.FileVersion)
		return b
	}
	if len(e.Scalars) == 0 && len(e.Texts) == 0 {
		return b
	}
	var sum []byte
	for _, s := range e.Scalars {
		var v []byte
		v = protowire.AppendTag(v, valueTag, protowire.BytesType)
		v = protowire.AppendString(v, s.Tag)
		v = protowire.AppendTag(v, valueSimpleValue, protowire.Fixed32Type)
		v = protowire.AppendFixed32(v, math.Float32bits(s.Value))
		sum = appendMessage(sum, summaryValue, v)
	}
	for _, t := range e.Texts {
		var plugin, meta, tensor, v []byte
		plugin = protowire.AppendTag(plugin, pluginName, protowire.BytesType)
		plugin = protowire.AppendString(plugin, "text")
		meta = appendMessage(meta, metadataPluginData, plugin)
		meta = protowire.AppendTag(meta, metadataDataClass, protowire.VarintType)
		meta = protowire.AppendVarint(meta, dataClassValue)
		tensor = protowire.AppendTag(tensor, tensorDType, protowire.VarintType)
		tensor = protowire.AppendVarint(tensor, dtString)
		tensor = appendMessage(tensor, tensorShape, nil)
		tensor = protowire.AppendTag(tensor, tensorStrings, protowire.BytesType)
		tensor = protowire.AppendString(tensor, t.Text)
		v = protowire.AppendTag(v, valueTag, protowire.BytesType)
		v = protowire.AppendString(v, t.Tag)
		v = appendMessage(v, valueMetadata, meta)
		v = appendMessage(v, valueTensor, tensor)
		sum = appendMessage(sum, summaryValue, v)
	}
	return appendMessage(b, eventSummary, sum)
}

func appendMessage(b []byte, num protowire.Number, msg []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, msg)
}

// Unmarshal decodes a tensorboard.Event, keeping the fields Event has and skipping the others.
func Unmarshal(b []byte) (Event, error) {
	var e Event
	err := pbwire.EachField(b, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error {
		switch {
		case num == eventWallTime && typ == protowire.Fixed64Type:
			e.WallTime = math.Float64frombits(x)
		case num == eventStep && typ == protowire.VarintType:
			e.Step = int64(x)
		case num == eventFileVersion && typ == protowire.BytesType:
			e.FileVersion = string(v)
		case num == eventSummary && typ == protowire.BytesType:
			return pbwire.EachField(v, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
				if num != summaryValue || typ != protowire.BytesType {
					return nil
				}
				return e.addValue(v)
			})
		}
		return nil
	})
	return e, err
}

// addValue decodes one Summary.Value into e's scalars or texts.
func (e *Event) addValue(b []byte) error {
	var tag, text string
	var scalar float32
	isScalar, isText := false, false
	err := pbwire.EachField(b, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error {
		switch {
		case num == valueTag && typ == protowire.BytesType:
			tag = string(v)
		case num == valueSimpleValue && typ == protowire.Fixed32Type:
			scalar, isScalar = math.Float32frombits(uint32(x)), true
		case num == valueTensor && typ == protowire.BytesType:
			return pbwire.EachField(v, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
				if num == tensorStrings && typ == protowire.BytesType {
					text, isText = string(v), true
				}
				return nil
			})
		}
		return nil
	})
	switch {
	case isScalar:
		e.Scalars = append(e.Scalars, Scalar{Tag: tag, Value: scalar})
	case isText:
		e.Texts = append(e.Texts, Text{Tag: tag, Text: text})
	}
	return err
}
