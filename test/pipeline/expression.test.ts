import { describe, expect, it } from 'vitest';
import { evaluateExpression, ExpressionSyntaxError, parseExpression } from '../../src/pipeline/expression.js';

const vars = {
  CI_COMMIT_BRANCH: 'feature/login',
  CI_PIPELINE_SOURCE: 'push',
  EMPTY: '',
  PATTERN: '/^FEATURE/i',
  DEPLOY: 'true',
};

const holds = (text: string): boolean => evaluateExpression(parseExpression(text), vars);

describe('CI/CD expressions as rules:if writes them', () => {
  it.each([
    ['$CI_PIPELINE_SOURCE == "push"', true],
    ["$CI_PIPELINE_SOURCE == 'web'", false],
    ['$CI_PIPELINE_SOURCE != "web"', true],
    ['$CI_COMMIT_BRANCH =~ /^feature\\//', true],
    ['$CI_COMMIT_BRANCH =~ /^FEATURE/', false],
    ['$CI_COMMIT_BRANCH =~ /^FEATURE/i', true],
    ['$CI_COMMIT_BRANCH !~ /^release/', true],
    ['$CI_COMMIT_BRANCH =~ $PATTERN', true],
    ['$CI_COMMIT_TAG =~ /.*/', false],
    ['$CI_COMMIT_TAG !~ /.*/', true],
  ])('%s is %s', (text, expected) => {
    expect(holds(text)).toBe(expected);
  });

  it('tells unset, empty and set variables apart', () => {
    expect(holds('$CI_COMMIT_TAG')).toBe(false);
    expect(holds('$CI_COMMIT_TAG == null')).toBe(true);
    expect(holds('$EMPTY')).toBe(false);
    expect(holds('$EMPTY == null')).toBe(false);
    expect(holds('$EMPTY == ""')).toBe(true);
    expect(holds('$DEPLOY')).toBe(true);
    expect(holds('$DEPLOY != null')).toBe(true);
  });

  it('binds && tighter than || and honours parentheses', () => {
    expect(holds('$DEPLOY || $CI_COMMIT_TAG && $NOPE')).toBe(true);
    expect(holds('($DEPLOY || $CI_COMMIT_TAG) && $NOPE')).toBe(false);
    expect(holds('$CI_PIPELINE_SOURCE == "push" && ($CI_COMMIT_BRANCH =~ /^main$/ || $CI_COMMIT_BRANCH =~ /^feature/)')).toBe(true);
    expect(holds('$CI_PIPELINE_SOURCE == "schedule" || $CI_PIPELINE_SOURCE == "web"')).toBe(false);
  });

  it.each([
    ['$A ==', 'expected a value at the end'],
    ['$A == "x', 'is not closed'],
    ['($A', 'not closed by a )'],
    ['$A "b"', "unexpected 'string'"],
    ['$A =~ /[/', 'not a valid regular expression'],
    ['A == "b"', "unexpected 'A == \"b\"'"],
    ['', 'the expression is empty'],
    // GitLab's lexer takes $NAME only: `${NAME}` is a syntax error there, not another spelling.
    ['${CI_COMMIT_BRANCH} == "x"', 'write $CI_COMMIT_BRANCH without braces'],
  ])('refuses %j: %s', (text, message) => {
    expect(() => parseExpression(text)).toThrow(ExpressionSyntaxError);
    expect(() => parseExpression(text)).toThrow(message);
  });
});
