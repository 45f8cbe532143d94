import express from 'express'
import { receiveSignedEvent } from './receive.js'

console.log(await receiveSignedEvent(express()))
