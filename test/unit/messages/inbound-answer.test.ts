import { describe, expect, it } from "vitest";
import { answerOf, InboundAnswer } from "../../../src/messages/inbound-answer";

// The operator's inbound answers as its messages webhook reference shows them (`interactive` with
// `button_reply`, `list_reply` or a Flow's `nfm_reply`; a template's quick reply as `button`), read
// from the part of the message the record keeps as its content.

describe("a user's answer, from the record's content", () => {
  it("a reply button: its id and title", () => {
    expect(
      answerOf("interactive", { type: "button_reply", button_reply: { id: "confirm", title: "Confirm" } }),
    ).toEqual({
      type: "button_reply",
      id: "confirm",
      title: "Confirm",
      description: null,
      flow: null,
    });
  });

  it("a list row: its id, title and description", () => {
    const answer = answerOf("interactive", {
      type: "list_reply",
      list_reply: { id: "slot-9", title: "9:00", description: "Friday morning" },
    });
    expect(answer).toEqual({
      type: "list_reply",
      id: "slot-9",
      title: "9:00",
      description: "Friday morning",
      flow: null,
    });
    expect(answerOf("interactive", { type: "list_reply", list_reply: { id: "slot-9", title: "9:00" } })).toMatchObject({
      description: null,
    });
  });

  it("a template's quick-reply button: its payload as the id, its text as the title", () => {
    expect(answerOf("button", { payload: "STOP_PROMOS", text: "Stop promotions" })).toEqual({
      type: "button",
      id: "STOP_PROMOS",
      title: "Stop promotions",
      description: null,
      flow: null,
    });
  });

  it("a Flow's reply: its name, body and response_json parsed; a response that is no JSON object reads as null", () => {
    const content = {
      type: "nfm_reply",
      nfm_reply: { name: "flow", body: "Sent", response_json: '{"flow_token": "booking-1042", "date": "2026-12-01"}' },
    };
    expect(answerOf("interactive", content)).toEqual({
      type: "nfm_reply",
      id: null,
      title: null,
      description: null,
      flow: { name: "flow", body: "Sent", response: { flow_token: "booking-1042", date: "2026-12-01" } },
    });
    for (const response_json of ["not json", "[1, 2]", undefined])
      expect(
        answerOf("interactive", { type: "nfm_reply", nfm_reply: { name: "flow", body: "Sent", response_json } })?.flow,
      ).toEqual({ name: "flow", body: "Sent", response: null });
  });

  it("none for other types, other interactive kinds, or parts of no readable shape; odd fields read as null", () => {
    expect(answerOf("text", null)).toBeNull();
    expect(answerOf("image", { id: "media-1" })).toBeNull();
    expect(answerOf("interactive", { type: "call_permission_reply", call_permission_reply: {} })).toBeNull();
    expect(answerOf("interactive", { type: "button_reply", button_reply: "confirm" })).toBeNull();
    expect(answerOf("interactive", { type: "button_reply" })).toBeNull();
    expect(answerOf("button", { other: 1 })).toBeNull();
    expect(answerOf("interactive", { type: "button_reply", button_reply: { id: 7, title: "Confirm" } })).toMatchObject({
      id: null,
      title: "Confirm",
    });
  });

  it("every answer fits its documented schema", () => {
    for (const a of [
      answerOf("interactive", { type: "button_reply", button_reply: { id: "a", title: "A" } }),
      answerOf("button", { payload: "p", text: "t" }),
      answerOf("interactive", { type: "nfm_reply", nfm_reply: { response_json: "{}" } }),
    ])
      expect(InboundAnswer.parse(a)).toEqual(a);
  });
});
